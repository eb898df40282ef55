package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/gateway"
	"github.com/mcp-hangar/hangar/internal/telemetry"
)

// TestJunkMethodsMintNoSeries: 1,000 JSON-RPC methods a caller makes up
// (some the scope guard refuses, some mcp-go answers "method not found",
// some notifications) leave the number of /metrics series where the first
// one put it: every unknown method is mcp_method_name="_OTHER".
func TestJunkMethodsMintNoSeries(t *testing.T) {
	t.Parallel()
	s := newScopeGateway(t, func(_ *config.Config, g *gateway.Gateway) {
		// Telemetry as the app makes it with OTLP off: metrics only.
		tel, err := telemetry.New(t.Context(), telemetry.Options{Recorder: g.Metrics})
		if err != nil {
			t.Fatal(err)
		}
		g.Telemetry = tel
	})
	admin := s.session(t, scopeAdminTok)
	reader := s.session(t, scopeReaderTok)
	series := func() (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.url+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+scopeAdminTok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		n := 0
		for _, line := range strings.Split(string(b), "\n") {
			// Series of the MCP histograms only: the process and Go
			// runtime collectors move on their own.
			if strings.HasPrefix(line, "mcp_") {
				n++
			}
		}
		return n, string(b)
	}
	junk := func(i int) {
		switch i % 3 {
		case 0: // refused by the scope guard (needs hangar:admin)
			s.post(t, reader, rpcMsg(i+10, fmt.Sprintf("junk/method-%d", i), `{}`))
		case 1: // passed to mcp-go, which knows no such method
			s.post(t, admin, rpcMsg(i+10, fmt.Sprintf("tools/junk-%d", i), `{}`))
		default: // a notification
			s.post(t, admin, `{"jsonrpc":"2.0","method":"notifications/junk-`+itoa(i)+`"}`)
		}
	}
	for i := range 3 {
		junk(i)
	}
	before, _ := series()
	for i := 3; i < 1003; i++ {
		junk(i)
	}
	after, body := series()
	if after != before {
		t.Errorf("1,000 made-up methods moved the MCP series from %d to %d", before, after)
	}
	if strings.Contains(body, "junk") {
		t.Errorf("a made-up method is a label value:\n%s", grepLines(body, "junk"))
	}
	if !strings.Contains(body, `mcp_method_name="_OTHER"`) {
		t.Errorf("no _OTHER series:\n%s", grepLines(body, "mcp_server_operation"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) && len(out) < 20 {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
