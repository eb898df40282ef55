package dashboard_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/dashboard"
	"github.com/mcp-hangar/hangar/internal/readmodel"
	"github.com/mcp-hangar/hangar/internal/store"
)

func withCreds(connected ...string) (fakeViews, *fakeCreds) {
	c := &fakeCreds{connected: map[string]bool{}}
	for _, n := range connected {
		c.connected[n] = true
	}
	return fakeViews{servers: []readmodel.Summary{{ID: "math", State: "ready"}, {ID: "mine-a", State: "ready"}}, creds: c}, c
}

// A server's page tells the caller whether they are connected to its
// upstream: since when, until when, and offers Disconnect for their own
// login (type oauth); another caller sees their own state only.
func TestUpstreamLoginShown(t *testing.T) {
	t.Parallel()
	views, _ := withCreds("admin")
	e := newEndpoint(t, views)
	for _, c := range []struct {
		name, path, token string
		want, not         []string
	}{
		{"connected", "/ui/api/server/math?part=head", adminTok, []string{
			`<section class="sec upstream" data-type="oauth" data-connected="true"><h3>Upstream login</h3>`,
			`<dt>You</dt><dd><b>admin</b> <span class="pill health-ok">connected</span></dd>`,
			`<dt>Logged in</dt><dd class="since">2026-11-28 11:40:37Z</dd>`,
			`<dt>Token ends</dt><dd class="expires">2026-11-28 12:40:37Z <span class="muted">(refreshed before)</span></dd>`,
			`<button type="button" class="reject" data-disconnect="math"`,
		}, nil},
		{"another caller, not connected", "/ui/api/server/math?part=head", readerTok, []string{
			`data-connected="false"`, `<b>reader</b> <span class="pill muted-pill">not connected</span>`, "your next call of its tools asks you to log in",
		}, []string{"data-disconnect", "Logged in", "admin"}},
		{"one service identity: nothing to disconnect", "/ui/api/server/disc?part=head", adminTok, []string{
			`data-type="client_credentials" data-connected="true"`, "one service identity for every caller",
		}, []string{"data-disconnect"}},
		{"the body part has none", "/ui/api/server/math?part=body", adminTok, nil, []string{"Upstream login"}},
		{"a server without upstream_auth", "/ui/api/server/cand?part=head", adminTok, nil, []string{"Upstream login"}},
	} {
		resp, body := e.do(t, "GET", c.path, c.token)
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d %s", c.name, resp.StatusCode, body)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: %s lacks\n%s\nin\n%s", c.name, c.path, w, body)
			}
		}
		for _, w := range c.not {
			if strings.Contains(body, w) {
				t.Errorf("%s: %s holds %s:\n%s", c.name, c.path, w, body)
			}
		}
	}
}

// Disconnect drops the caller's own login and nobody else's; it needs
// hangar:call (as mcp/server/disconnect does) and a server inside the
// caller's servers, and a cross-origin POST never reaches it. Every
// refusal is audited; the drop itself is audited by the credential
// manager (upstream_auth/disconnect).
func TestDisconnect(t *testing.T) {
	t.Parallel()
	views, creds := withCreds("admin", "caller", "limited")
	e := newEndpoint(t, views)
	connected := func() []string {
		creds.mu.Lock()
		defer creds.mu.Unlock()
		var out []string
		for n := range creds.connected {
			out = append(out, n)
		}
		slices.Sort(out)
		return out
	}
	post := func(path, token, origin string) (*http.Response, string) {
		req, err := http.NewRequestWithContext(t.Context(), "POST", e.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, c := range []struct {
		name, path, token, origin string
		status                    int
		body                      string
		code                      int // a refusal's seed-004 code
		left                      string
		audit                     *store.AuditEntry // the newest entry, when this writes one
	}{
		{"no token", "/ui/api/disconnect/math", "", "", 401, "", auth.CodeUnauthenticated, "admin caller limited", nil},
		{"a read token cannot", "/ui/api/disconnect/math", readerTok, "", 403, "Token missing required scope: hangar:call", auth.CodeInsufficientScope, "admin caller limited",
			&store.AuditEntry{Identity: "reader", Action: "request", Tool: "POST /ui/api/disconnect/math", Outcome: "denied"}},
		{"another site's page cannot", "/ui/api/disconnect/math", adminTok, "https://evil.example", 403, "origin https://evil.example is not allowed", 0, "admin caller limited", nil},
		{"outside the caller's servers", "/ui/api/disconnect/math", limitedTok, "", 403, "Token missing required scope: server:math", auth.CodeInsufficientScope, "admin caller limited",
			&store.AuditEntry{Identity: "limited", Server: "math", Action: dashboard.ActionDisconnect, Outcome: "denied", Reason: "forbidden: Token missing required scope: server:math"}},
		{"a call token drops its own", "/ui/api/disconnect/math", callerTok, "", 200, "math: disconnected: your next call there asks you to log in again", 0, "admin limited", nil},
		{"the admin drops theirs", "/ui/api/disconnect/math", adminTok, "http://127.0.0.1:9", 200, "math: disconnected", 0, "limited", nil},
		{"twice", "/ui/api/disconnect/math", adminTok, "", 200, "math: you were not connected: nothing to drop", 0, "limited", nil},
		{"a server without a login to drop", "/ui/api/disconnect/disc", adminTok, "", 409, "disc: no upstream_auth of type oauth", 0, "limited", nil},
	} {
		resp, body := post(c.path, c.token, c.origin)
		if resp.StatusCode != c.status || !strings.Contains(body, c.body) {
			t.Errorf("%s: %d %s, want %d with %q", c.name, resp.StatusCode, body, c.status, c.body)
		}
		if c.code != 0 {
			var m struct {
				Error struct{ Code int } `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &m); err != nil || m.Error.Code != c.code {
				t.Errorf("%s: refusal %s, want code %d", c.name, body, c.code)
			}
		}
		if got := strings.Join(connected(), " "); got != c.left {
			t.Errorf("%s: connected now %q, want %q", c.name, got, c.left)
		}
		if c.audit == nil {
			continue
		}
		es, err := e.audit.RecentAudit(t.Context(), "", 1)
		if err != nil || len(es) != 1 {
			t.Fatalf("%s: audit %v %v", c.name, es, err)
		}
		got := es[0]
		if c.audit.Action == "request" {
			if !strings.Contains(got.Reason, auth.ScopeCall) {
				t.Errorf("%s: reason %q", c.name, got.Reason)
			}
			got.Reason = ""
		}
		got.ID, got.At, got.DurationMs = 0, time.Time{}, 0
		if got != *c.audit {
			t.Errorf("%s: audit\n got %+v\nwant %+v", c.name, got, *c.audit)
		}
	}
	if creds.dropped[0] != "math/caller" || creds.dropped[1] != "math/admin" || len(creds.dropped) != 2 {
		t.Errorf("dropped %v", creds.dropped)
	}
	if resp, _ := e.do(t, "GET", "/ui/api/disconnect/math", adminTok); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET disconnect = %d, want 405", resp.StatusCode)
	}
}
