package telemetry

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// Log field names: the trace context, and what the gateway's log lines
// about a request name.
const (
	FieldTraceID       = "trace_id"
	FieldSpanID        = "span_id"
	FieldCorrelationID = "correlation_id"
	FieldTool          = "tool"
	FieldServer        = "mcp_server"
	FieldDurationMs    = "duration_ms"
	FieldError         = "error"
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
