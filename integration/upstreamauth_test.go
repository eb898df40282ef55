package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/upstreamauth/authtest"
)

// TestContainerPerIdentity: env_from_upstream_auth gives each caller a
// container of their own, whose variable holds that caller's upstream
// token (their login, asked for by URL-mode elicitation); the containers
// are hardened and labelled as any other, and none is left afterwards.
func TestContainerPerIdentity(t *testing.T) {
	t.Parallel()
	as := authtest.New(authtest.Options{DCR: true})
	t.Cleanup(as.Close)
	users := map[string]string{"ann": "ann-upstream", "ben": "ben-upstream"}
	var yaml strings.Builder
	yaml.WriteString("auth:\n  tokens:\n")
	for name := range users {
		sum := sha256.Sum256([]byte("hgr_it-" + name + "-0123456789abcdef"))
		fmt.Fprintf(&yaml, "    - {name: %s, token_sha256: %q, scopes: [hangar:read, hangar:call]}\n", name, hex.EncodeToString(sum[:]))
	}
	fmt.Fprintf(&yaml, `mcp_servers:
  kit:
    mode: docker
    image: mcp-hangar/testkit:dev
    env_from_upstream_auth: UPSTREAM_TOKEN
    upstream_auth: {type: oauth, authorization_server: %q, resource: %q}
`, as.Issuer(), as.Resource())
	g := startGateway(t, yaml.String())

	for name, user := range users {
		var asked atomic.Int32
		tr, err := transport.NewStreamableHTTP(g.MCPURL, transport.WithHTTPHeaders(map[string]string{
			"Authorization": "Bearer hgr_it-" + name + "-0123456789abcdef"}))
		if err != nil {
			t.Fatal(err)
		}
		s := startSession(t, mcpclient.NewClient(tr,
			mcpclient.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &struct{}{}}}),
			mcpclient.WithElicitationHandler(loginHandler(func(ctx context.Context, link string) error {
				asked.Add(1)
				status, page, err := authtest.NewBrowser().Login(ctx, link, user)
				if err != nil || status != http.StatusOK {
					return fmt.Errorf("login: %d %v %s", status, err, page)
				}
				return nil
			}))))
		r := s.callOne(t, "kit", "env", map[string]any{"name": "UPSTREAM_TOKEN"})
		tok := textOfResult(r)
		if got, ok := as.UserOf(t.Context(), tok); !ok || got != user || asked.Load() != 1 {
			t.Fatalf("%s's container holds a token of %q (%v), asked %d times; want %s's, one login (error: %v)", name, got, ok, asked.Load(), user, r["error"])
		}
	}
	cs := containers(t, g.Instance, "kit")
	if len(cs) != 2 {
		t.Fatalf("%d containers of kit, want one per caller: %s", len(cs), describe(cs))
	}
	for _, c := range cs {
		if c.Labels["io.mcp-hangar.managed"] != "true" {
			t.Errorf("container %s is not labelled managed", c.ID)
		}
	}
}

type loginHandler func(ctx context.Context, link string) error

func (f loginHandler) Elicit(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	if r.Params.Mode != mcp.ElicitationModeURL {
		return nil, fmt.Errorf("elicitation mode %q, want url", r.Params.Mode)
	}
	if err := f(ctx, r.Params.URL); err != nil {
		return nil, err
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept}}, nil
}

// textOfResult is the text of a hangar_call result.
func textOfResult(r map[string]any) string {
	if s, ok := r["result"].(string); ok {
		return s
	}
	res, _ := r["result"].(map[string]any)
	content, _ := res["content"].([]any)
	var parts []string
	for _, c := range content {
		if m, ok := c.(map[string]any); ok {
			if s, ok := m["text"].(string); ok {
				parts = append(parts, s)
			}
		}
	}
	return strings.Join(parts, "")
}
