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

// LogHandler wraps h so that a record logged with a context that carries
// a span (InfoContext(ctx, …) and the like) carries its trace_id and
// span_id, unless a BindLog logger bound them already: a line written
// while serving a request names its trace however it was logged.
func LogHandler(h slog.Handler) slog.Handler { return &traceHandler{h: h} }

type traceHandler struct {
	h     slog.Handler
	bound bool // trace_id is among the With attributes
}

func (t *traceHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return t.h.Enabled(ctx, level)
}

func (t *traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if !t.bound && ctx != nil {
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !hasTraceID(r) {
			r = r.Clone()
			r.AddAttrs(slog.String(FieldTraceID, sc.TraceID().String()), slog.String(FieldSpanID, sc.SpanID().String()))
		}
	}
	return t.h.Handle(ctx, r)
}

func hasTraceID(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == FieldTraceID
		return !found
	})
	return found
}

func (t *traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	bound := t.bound
	for _, a := range attrs {
		bound = bound || a.Key == FieldTraceID
	}
	return &traceHandler{h: t.h.WithAttrs(attrs), bound: bound}
}

func (t *traceHandler) WithGroup(name string) slog.Handler {
	return &traceHandler{h: t.h.WithGroup(name), bound: t.bound}
}
