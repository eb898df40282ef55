package telemetry

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// Log field names of the trace context.
const (
	FieldTraceID = "trace_id"
	FieldSpanID  = "span_id"
)

// BindLog returns l with the trace and span ids of ctx's span bound, l
// itself when ctx carries no span context.
func BindLog(ctx context.Context, l *slog.Logger) *slog.Logger {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return l
	}
	return l.With(FieldTraceID, sc.TraceID().String(), FieldSpanID, sc.SpanID().String())
}
