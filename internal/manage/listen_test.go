package manage_test

import (
	"context"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-hangar/hangar/internal/clientconfig"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/manage"
)

// TestManagementChangesReachListenStreams: the changes the management
// protocol makes to what the front door lists (a policy that exposes or
// disables a server, an uninstall) reach a 2026-07-28 go-sdk client's
// subscriptions/listen stream within a second, as they reach 2025-11-25
// sessions.
func TestManagementChangesReachListenStreams(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			var h *harness
			o := manage.Options{Install: clientconfig.Options{Runtimes: map[string]config.Runtime{"npx": {Image: "node:22", Network: "bridge"}}, Execution: config.Default().Execution}, OnChanged: func() { h.Gateway.FrontDoor.Kick() }}
			h = newHarness(t, harnessOpts{opts: &o})
			h.Gateway.Exposed = func(id string) (bool, bool) {
				p, ok := h.Svc.Policy(id)
				return p.AllowImplicitInvocation, ok
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); h.Gateway.FrontDoor.Run(ctx) }()
			t.Cleanup(func() { cancel(); <-done })

			changed := make(chan struct{}, 16)
			c := sdk.NewClient(&sdk.Implementation{Name: "listen", Version: "1"}, &sdk.ClientOptions{
				ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
			})
			s, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: h.URL + "/mcp"}, &sdk.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })

			h.install(`{"mcpServers": {"svc": {"command": "npx", "args": ["svc-pkg"]}}}`, nil)
			if _, err := h.Gateway.Batch().Invoke(t.Context(), nil, "svc", "add", nil); err != nil {
				t.Fatal(err)
			}
			for _, step := range []struct {
				name string
				do   func()
			}{
				{"policy exposes svc", func() {
					h.rpc(manage.MethodPolicySet, map[string]any{"name": "svc", "allow_implicit_invocation": true})
				}},
				{"uninstall", func() { h.rpc(manage.MethodUninstall, map[string]any{"name": "svc"}) }},
			} {
				for len(changed) > 0 {
					<-changed
				}
				began := time.Now()
				step.do()
				select {
				case <-changed:
				case <-time.After(time.Second - time.Since(began) + 100*time.Millisecond):
					t.Errorf("%s: no tools/list_changed within 1 s", step.name)
				}
			}
		})
	}
}
