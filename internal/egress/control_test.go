package egress

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestControlLines: the gateway's lines replace the guard's engine
// ranges as they come; a bad line changes nothing.
func TestControlLines(t *testing.T) {
	t.Parallel()
	g := &Guard{Forbidden: []netip.Prefix{netip.MustParsePrefix("11.0.0.0/24")}}
	in := strings.Join([]string{
		`{"forbid":["12.0.0.0/16","2600:1::/32"]}`,
		`not json`,
	}, "\n") + "\n"
	readControl(strings.NewReader(in), g, slog.New(slog.DiscardHandler))
	for addr, want := range map[string]bool{"11.0.0.1": false, "12.0.3.4": true, "2600:1::5": true} {
		if got := g.forbidden(netip.MustParseAddr(addr)); got != want {
			t.Errorf("forbidden(%s) = %v, want %v", addr, got, want)
		}
	}
}

// TestControlEOFEndsTheProxy: with --control the proxy serves until its
// stdin ends (the gateway that held it is gone).
func TestControlEOFEndsTheProxy(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	var out, errs bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- Main(context.Background(), []string{"--listen", "127.0.0.1:0", "--allow", "x.example", "--control"}, r, &out, &errs)
	}()
	if _, err := w.Write([]byte(`{"forbid":["12.0.0.0/16"]}` + "\n")); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Main: %v\n%s", err, errs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the proxy still serves 10s after its stdin ended")
	}
	if !strings.Contains(errs.String(), "engine networks updated") {
		t.Errorf("the control line was not applied:\n%s", errs.String())
	}
}
