package telemetry

import (
	"context"
	"encoding/hex"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// metaCarrier is the trace context fields of a params._meta (SEP-414),
// nil when it has no traceparent.
func metaCarrier(traceparent, tracestate, baggage string) propagation.MapCarrier {
	if traceparent == "" {
		return nil
	}
	c := propagation.MapCarrier{keyTraceparent: traceparent}
	if tracestate != "" {
		c[keyTracestate] = tracestate
	}
	if baggage != "" {
		c[keyBaggage] = baggage
	}
	return c
}

// keepBaggage leaves of the client's baggage in ctx only the members
// whose keys forwardBaggage lists: what is in ctx is what providers get
// (MetaFields, Headers).
func (t *Telemetry) keepBaggage(ctx context.Context) context.Context {
	b := baggage.FromContext(ctx)
	if b.Len() == 0 {
		return ctx
	}
	var keep []baggage.Member
	for _, m := range b.Members() {
		if t.forwardBaggage[m.Key()] {
			keep = append(keep, m)
		}
	}
	if len(keep) == 0 {
		return baggage.ContextWithoutBaggage(ctx)
	}
	kept, err := baggage.New(keep...)
	if err != nil {
		return baggage.ContextWithoutBaggage(ctx)
	}
	return baggage.ContextWithBaggage(ctx, kept)
}

// MetaFields are the trace context of ctx's span as params._meta fields
// of a request to a provider; nil when ctx carries no span context. They
// are what the propagator (W3C trace context and baggage) would write,
// written directly: through its carrier they cost two maps per call.
func MetaFields(ctx context.Context) map[string]any {
	return traceFields(ctx, func(s string) any { return s })
}

// Headers are the trace context of ctx's span as HTTP headers, for a
// provider served over HTTP; nil when ctx carries no span context.
func Headers(ctx context.Context) map[string]string {
	return traceFields(ctx, func(s string) string { return s })
}

// traceFields writes ctx's trace context into a map of the carrier's value
// type.
func traceFields[V any](ctx context.Context, value func(string) V) map[string]V {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	out := make(map[string]V, 3)
	out[keyTraceparent] = value(formatTraceparent(sc))
	if ts := sc.TraceState().String(); ts != "" {
		out[keyTracestate] = value(ts)
	}
	if b := baggage.FromContext(ctx).String(); b != "" {
		out[keyBaggage] = value(b)
	}
	return out
}

// The W3C fields, as propagation.TraceContext and Baggage name them.
const (
	keyTraceparent = "traceparent"
	keyTracestate  = "tracestate"
	keyBaggage     = "baggage"
)

// formatTraceparent is sc as propagation.TraceContext writes it: version 00,
// and of the flags only sampled.
func formatTraceparent(sc trace.SpanContext) string {
	var b [55]byte
	tid, sid := sc.TraceID(), sc.SpanID()
	b[0], b[1], b[2] = '0', '0', '-'
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	flags := [1]byte{byte(sc.TraceFlags() & trace.FlagsSampled)}
	hex.Encode(b[53:55], flags[:])
	return string(b[:])
}
