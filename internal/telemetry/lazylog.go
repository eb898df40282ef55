package telemetry

import (
	"context"
	"log/slog"
	"slices"
)

// lazyAttrs is a slog.Handler that keeps the attributes of With instead of
// handing them to the handler below at once. slog's JSON and text handlers
// format With attributes eagerly, so With("correlation_id", …) on every
// tool call (and again per batch and per call in it) cost formatting and
// allocations on calls that, at INFO, log nothing. Here they cost a slice
// append, and are formatted only for a record that is actually written.
type lazyAttrs struct {
	h     slog.Handler
	attrs []slog.Attr
}

// WithLazy returns l with args bound lazily: the gateway binds a tool
// call's correlation ID and tool this way.
func WithLazy(l *slog.Logger, args ...any) *slog.Logger {
	h := l.Handler()
	if lz, ok := h.(*lazyAttrs); ok {
		return slog.New(lz).With(args...)
	}
	return slog.New(&lazyAttrs{h: h}).With(args...)
}

func (l *lazyAttrs) Enabled(ctx context.Context, level slog.Level) bool {
	return l.h.Enabled(ctx, level)
}

func (l *lazyAttrs) Handle(ctx context.Context, r slog.Record) error {
	if len(l.attrs) == 0 {
		return l.h.Handle(ctx, r)
	}
	// The bound attributes come first, as they would from WithAttrs,
	// except one the record sets itself: a line never carries a key twice
	// (an audit line's tool is the provider's, the call's bound tool
	// hangar_call). One AddAttrs for all: added one by one, the record's
	// overflow slice grows several times (an audit line has ten).
	var buf [16]slog.Attr
	all := append(buf[:0], l.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		all = append(all, a)
		return true
	})
	bound := all[:len(l.attrs)]
	own := all[len(l.attrs):]
	kept := bound[:0]
	for _, b := range bound {
		if !slices.ContainsFunc(own, func(a slog.Attr) bool { return a.Key == b.Key }) {
			kept = append(kept, b)
		}
	}
	if len(kept) < len(bound) {
		all = append(kept, own...)
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(all...)
	return l.h.Handle(ctx, out)
}

func (l *lazyAttrs) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return l
	}
	// Full slice expression: siblings bound from one parent never share
	// (and overwrite) a backing array.
	return &lazyAttrs{h: l.h, attrs: append(l.attrs[:len(l.attrs):len(l.attrs)], attrs...)}
}

func (l *lazyAttrs) WithGroup(name string) slog.Handler {
	// A group must enclose what comes after it only: bind what there is
	// now for real, then group.
	return l.h.WithAttrs(l.attrs).WithGroup(name)
}
