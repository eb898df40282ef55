package dashboard_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dashboard"
	"github.com/mcp-hangar/hangar/internal/manage"
)

// docs/dashboard.md: its YAML sample loads, and the names it gives (the
// event, the messages people meet) are the ones the gateway uses.
func TestDashboardDocs(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "dashboard.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(doc, -1)
	if len(blocks) == 0 {
		t.Fatal("no yaml sample")
	}
	for _, b := range blocks {
		cfg, err := config.Parse([]byte(b[1]), nil)
		if err != nil {
			t.Errorf("the sample does not load: %v\n%s", err, b[1])
			continue
		}
		if !cfg.Auth.AllowAnonymous || len(cfg.Auth.Tokens) != 1 || cfg.FrontDoor.Discovery != "search" {
			t.Errorf("the sample loads as %+v", cfg.Auth)
		}
	}
	resp, _ := newEndpoint(t, fakeViews{}).do(t, "GET", "/ui/", "")
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{
		"`Content-Security-Policy: " + csp + "`",
		"event: " + manage.MethodLog, `"method":"` + manage.MethodLog + `"`,
		auth.ErrUnauthenticated.Message, auth.MissingScope(auth.ScopeRead).Message,
		"GET /events?follow=ID",
		"`POST /ui/api/disconnect/ID`", "`" + dashboard.ActionDisconnect + "`",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/dashboard.md lacks %q", want)
		}
	}
}
