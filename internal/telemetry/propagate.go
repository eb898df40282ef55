package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// metaCarrier is the trace context fields of a params._meta (SEP-414),
// nil when it has no traceparent.
func metaCarrier(traceparent, tracestate, baggage string) propagation.MapCarrier {
	if traceparent == "" {
		return nil
	}
	c := propagation.MapCarrier{"traceparent": traceparent}
	if tracestate != "" {
		c["tracestate"] = tracestate
	}
	if baggage != "" {
		c["baggage"] = baggage
	}
	return c
}

// MetaFields are the trace context of ctx's span as params._meta fields
// of a request to a provider; nil when ctx carries no span context.
func MetaFields(ctx context.Context) map[string]any {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	out := make(map[string]any, len(c))
	for k, v := range c {
		out[k] = v
	}
	return out
}

// Headers are the trace context of ctx's span as HTTP headers, for a
// provider served over HTTP; nil when ctx carries no span context.
func Headers(ctx context.Context) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c
}
