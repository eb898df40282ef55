package telemetry

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// A lazily bound logger writes exactly what slog's own With would.
func TestLazyAttrsWriteLikeWith(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		log  func(l *slog.Logger, bind func(*slog.Logger, ...any) *slog.Logger)
	}{
		{"one level", func(l *slog.Logger, bind func(*slog.Logger, ...any) *slog.Logger) {
			bind(l, "correlation_id", "c1", "tool", "hangar_call").Info("x", "k", 1)
		}},
		{"nested, siblings apart", func(l *slog.Logger, bind func(*slog.Logger, ...any) *slog.Logger) {
			b := bind(l, "batch_id", "b1")
			one, two := bind(b, "call_id", "one"), bind(b, "call_id", "two")
			two.Warn("second")
			one.Warn("first", "attempt", 2)
		}},
		{"a group after binding", func(l *slog.Logger, bind func(*slog.Logger, ...any) *slog.Logger) {
			bind(l, "a", 1).WithGroup("g").With("b", 2).Info("grouped", "c", 3)
		}},
		{"below the level", func(l *slog.Logger, bind func(*slog.Logger, ...any) *slog.Logger) {
			bind(l, "a", 1).Debug("hidden")
		}},
	}
	eager := func(l *slog.Logger, args ...any) *slog.Logger { return l.With(args...) }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var want, got bytes.Buffer
			opts := &slog.HandlerOptions{Level: slog.LevelInfo, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}}
			tt.log(slog.New(slog.NewJSONHandler(&want, opts)), eager)
			tt.log(slog.New(slog.NewJSONHandler(&got, opts)), WithLazy)
			if got.String() != want.String() {
				t.Errorf("lazy:\n%s\nwant (slog With):\n%s", got.String(), want.String())
			}
			if tt.name == "below the level" && strings.Contains(got.String(), "hidden") {
				t.Error("a record below the level was written")
			}
		})
	}
}

// A key the record sets itself is not written again from the bound ones:
// JSON log lines never carry a key twice.
func TestLazyAttrsRecordKeyWins(t *testing.T) {
	t.Parallel()
	var got bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&got, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	WithLazy(l, "correlation_id", "c1", "tool", "hangar_call").Info("audit", "tool", "add", "mcp_server", "math")
	WithLazy(l, "correlation_id", "c2", "tool", "hangar_list").Info("other", "k", 1)
	want := `{"level":"INFO","msg":"audit","correlation_id":"c1","tool":"add","mcp_server":"math"}` + "\n" +
		`{"level":"INFO","msg":"other","correlation_id":"c2","tool":"hangar_list","k":1}` + "\n"
	if got.String() != want {
		t.Errorf("got\n%swant\n%s", got.String(), want)
	}
}

// BenchmarkLazyAuditLine is one audit line (audit.Record's fields, spelled
// out: package audit imports this one) through a call's lazily bound
// logger into slog's JSON handler.
func BenchmarkLazyAuditLine(b *testing.B) {
	l := WithLazy(slog.New(slog.NewJSONHandler(io.Discard, nil)), FieldCorrelationID, "0123456789abcdef", FieldTool, "hangar_call")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		l.LogAttrs(ctx, slog.LevelInfo, "audit",
			slog.String("identity", "agent"), slog.String("action", "hangar_call"), slog.String(FieldTool, "add"),
			slog.String(FieldServer, "math"), slog.Bool("allowed", true), slog.String("reason", ""),
			slog.String("outcome", "ok"), slog.Float64(FieldDurationMs, 0.42))
	}
}
