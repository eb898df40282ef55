package telemetry

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// metricExporter posts the SDK's metrics as OTLP/HTTP protobuf (see
// otlp.go for why it is not otlpmetrichttp). It turns what the SDK's
// default aggregations make into OTLP messages: sums, gauges and explicit
// bucket histograms; hangar's own instruments are histograms. Anything
// else is left out of the export with an error, the rest still sent.
type metricExporter struct {
	p           *otlpPoster
	temporality sdkmetric.TemporalitySelector
	down        atomic.Bool
}

var _ sdkmetric.Exporter = (*metricExporter)(nil)

// newMetricExporter reads OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE
// (cumulative, the default; delta; lowmemory).
func newMetricExporter(s exportSettings) (*metricExporter, error) {
	e := &metricExporter{p: newPoster(s), temporality: sdkmetric.DefaultTemporalitySelector}
	const key = "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"
	switch v, _ := otlpEnv(signalMetrics, "TEMPORALITY_PREFERENCE"); strings.ToLower(v) {
	case "", "cumulative":
	case "delta":
		e.temporality = sdkmetric.DeltaTemporalitySelector
	case "lowmemory":
		e.temporality = lowMemoryTemporality
	default:
		return nil, fmt.Errorf("%s: want cumulative, delta or lowmemory (got %q)", key, v)
	}
	return e, nil
}

// lowMemoryTemporality is the specification's "lowmemory": delta for
// synchronous counters and histograms, cumulative for the rest.
func lowMemoryTemporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	switch k {
	case sdkmetric.InstrumentKindCounter, sdkmetric.InstrumentKindHistogram:
		return metricdata.DeltaTemporality
	}
	return metricdata.CumulativeTemporality
}

func (e *metricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return e.temporality(k)
}

func (e *metricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (e *metricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	if e.down.Load() {
		return nil
	}
	msg, skipped := resourceMetrics(rm)
	var err error
	if len(msg.ScopeMetrics) > 0 {
		err = e.p.post(ctx, &metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{msg}})
	}
	if err == nil && skipped != nil {
		err = skipped
	}
	return err
}

func (e *metricExporter) ForceFlush(context.Context) error { return nil }

func (e *metricExporter) Shutdown(context.Context) error {
	e.down.Store(true)
	e.p.client.CloseIdleConnections()
	return nil
}

// resourceMetrics is rm as its OTLP message; skipped names the metrics
// whose data has no OTLP form here.
func resourceMetrics(rm *metricdata.ResourceMetrics) (*metricspb.ResourceMetrics, error) {
	out := &metricspb.ResourceMetrics{}
	if rm.Resource != nil {
		out.Resource = &resourcepb.Resource{Attributes: keyValues(rm.Resource.Attributes())}
		out.SchemaUrl = rm.Resource.SchemaURL()
	}
	var skipped []string
	for _, sm := range rm.ScopeMetrics {
		ms := make([]*metricspb.Metric, 0, len(sm.Metrics))
		for _, m := range sm.Metrics {
			pm := &metricspb.Metric{Name: m.Name, Description: m.Description, Unit: m.Unit}
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				pm.Data = histogram(d)
			case metricdata.Histogram[int64]:
				pm.Data = histogram(d)
			case metricdata.Sum[float64]:
				pm.Data = sum(d)
			case metricdata.Sum[int64]:
				pm.Data = sum(d)
			case metricdata.Gauge[float64]:
				pm.Data = &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: numberPoints(d.DataPoints)}}
			case metricdata.Gauge[int64]:
				pm.Data = &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: numberPoints(d.DataPoints)}}
			default:
				skipped = append(skipped, fmt.Sprintf("%s (%T)", m.Name, m.Data))
				continue
			}
			ms = append(ms, pm)
		}
		if len(ms) == 0 {
			continue
		}
		out.ScopeMetrics = append(out.ScopeMetrics, &metricspb.ScopeMetrics{
			Scope: &commonpb.InstrumentationScope{Name: sm.Scope.Name, Version: sm.Scope.Version,
				Attributes: keyValues(sm.Scope.Attributes.ToSlice())},
			SchemaUrl: sm.Scope.SchemaURL,
			Metrics:   ms,
		})
	}
	if len(skipped) > 0 {
		return out, fmt.Errorf("otlp: metrics not exported, no OTLP form for their data: %s", strings.Join(skipped, ", "))
	}
	return out, nil
}

func temporality(t metricdata.Temporality) metricspb.AggregationTemporality {
	switch t {
	case metricdata.DeltaTemporality:
		return metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	case metricdata.CumulativeTemporality:
		return metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	}
	return metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_UNSPECIFIED
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

func histogram[N int64 | float64](h metricdata.Histogram[N]) *metricspb.Metric_Histogram {
	pts := make([]*metricspb.HistogramDataPoint, len(h.DataPoints))
	for i, dp := range h.DataPoints {
		sum := float64(dp.Sum)
		p := &metricspb.HistogramDataPoint{
			Attributes:        keyValues(dp.Attributes.ToSlice()),
			StartTimeUnixNano: unixNano(dp.StartTime),
			TimeUnixNano:      unixNano(dp.Time),
			Count:             dp.Count,
			Sum:               &sum,
			BucketCounts:      dp.BucketCounts,
			ExplicitBounds:    dp.Bounds,
			Exemplars:         exemplars(dp.Exemplars),
		}
		if v, ok := dp.Min.Value(); ok {
			f := float64(v)
			p.Min = &f
		}
		if v, ok := dp.Max.Value(); ok {
			f := float64(v)
			p.Max = &f
		}
		pts[i] = p
	}
	return &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{
		DataPoints: pts, AggregationTemporality: temporality(h.Temporality)}}
}

func sum[N int64 | float64](s metricdata.Sum[N]) *metricspb.Metric_Sum {
	return &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: numberPoints(s.DataPoints),
		AggregationTemporality: temporality(s.Temporality), IsMonotonic: s.IsMonotonic}}
}

func numberPoints[N int64 | float64](dps []metricdata.DataPoint[N]) []*metricspb.NumberDataPoint {
	out := make([]*metricspb.NumberDataPoint, len(dps))
	for i, dp := range dps {
		p := &metricspb.NumberDataPoint{
			Attributes:        keyValues(dp.Attributes.ToSlice()),
			StartTimeUnixNano: unixNano(dp.StartTime),
			TimeUnixNano:      unixNano(dp.Time),
			Exemplars:         exemplars(dp.Exemplars),
		}
		switch v := any(dp.Value).(type) {
		case int64:
			p.Value = &metricspb.NumberDataPoint_AsInt{AsInt: v}
		case float64:
			p.Value = &metricspb.NumberDataPoint_AsDouble{AsDouble: v}
		}
		out[i] = p
	}
	return out
}

func exemplars[N int64 | float64](es []metricdata.Exemplar[N]) []*metricspb.Exemplar {
	if len(es) == 0 {
		return nil
	}
	out := make([]*metricspb.Exemplar, len(es))
	for i, e := range es {
		p := &metricspb.Exemplar{
			FilteredAttributes: keyValues(e.FilteredAttributes),
			TimeUnixNano:       unixNano(e.Time),
			SpanId:             e.SpanID,
			TraceId:            e.TraceID,
		}
		switch v := any(e.Value).(type) {
		case int64:
			p.Value = &metricspb.Exemplar_AsInt{AsInt: v}
		case float64:
			p.Value = &metricspb.Exemplar_AsDouble{AsDouble: v}
		}
		out[i] = p
	}
	return out
}

func keyValues(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, len(kvs))
	for i, kv := range kvs {
		out[i] = &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)}
	}
	return out
}

func anyValue(v attribute.Value) *commonpb.AnyValue {
	av := &commonpb.AnyValue{}
	switch v.Type() {
	case attribute.BOOL:
		av.Value = &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}
	case attribute.INT64:
		av.Value = &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}
	case attribute.FLOAT64:
		av.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}
	case attribute.STRING:
		av.Value = &commonpb.AnyValue_StringValue{StringValue: v.AsString()}
	case attribute.BYTESLICE:
		av.Value = &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}
	case attribute.BOOLSLICE:
		av.Value = array(v.AsBoolSlice(), func(b bool) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: b}}
		})
	case attribute.INT64SLICE:
		av.Value = array(v.AsInt64Slice(), func(n int64) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: n}}
		})
	case attribute.FLOAT64SLICE:
		av.Value = array(v.AsFloat64Slice(), func(f float64) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}
		})
	case attribute.STRINGSLICE:
		av.Value = array(v.AsStringSlice(), func(s string) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
		})
	case attribute.SLICE:
		av.Value = array(v.AsSlice(), anyValue)
	case attribute.MAP:
		av.Value = &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: keyValues(v.AsMap())}}
	}
	return av
}

func array[T any](vs []T, each func(T) *commonpb.AnyValue) *commonpb.AnyValue_ArrayValue {
	out := make([]*commonpb.AnyValue, len(vs))
	for i, v := range vs {
		out[i] = each(v)
	}
	return &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: out}}
}
