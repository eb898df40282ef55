package dashboard_test

import (
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/readmodel"
)

// Every view a caller limited to some servers reads holds those servers
// only: the list, a server's page and its traffic, groups, the replicas'
// containers, Try, the header's filter and the policy. A server out of reach looks
// like one that does not exist.
func TestViewsKeepToTheCallersServers(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, fakeViews{servers: []readmodel.Summary{{ID: "math", State: "ready"}, {ID: "mine-a", State: "ready"}}})
	for _, c := range []struct {
		path      string
		want      []string // in the answer
		mustNotBe []string // nowhere in it
	}{
		{"/ui/api/servers", []string{`data-id="mine-a"`}, []string{`data-id="math"`}},
		{"/ui/api/server/math?part=head", []string{"No server named"}, []string{"mcp-hangar/math:dev"}},
		{"/ui/api/server/mine-a?part=body", []string{"mine-a__add"}, nil},
		{"/ui/api/traffic/math", []string{`data-calls="0"`, "No calls in the last 15 minutes."}, nil},
		{"/ui/api/traffic/mine-a", []string{`data-calls="50"`, `data-errors="5"`, "<polyline"}, nil},
		{"/ui/api/traffic", []string{`data-calls="50"`}, nil},
		{"/ui/api/groups", []string{`data-id="mine-pool"`}, []string{`data-id="pool"`}},
		{"/ui/api/replicas", []string{`data-server="mine-a"`, `data-replica="r2"`}, []string{`data-server="math"`}},
		{"/ui/api/try?server=math&tool=add", []string{"Nothing of that name"}, []string{"try-form"}},
		{"/ui/api/try?server=mine-a&tool=add", []string{`data-call="mine-a__add"`}, nil},
		{"/ui/api/tools?q=add", []string{`"server":"mine-a"`}, []string{`"server":"math"`}},
		{"/ui/api/policy", []string{`data-id="mine-a"`, "data-withheld"}, []string{`data-id="math"`, "read-only"}},
	} {
		resp, body := e.do(t, "GET", c.path, limitedTok)
		if resp.StatusCode != 200 {
			t.Errorf("%s = %d %s", c.path, resp.StatusCode, body)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %s:\n%s", c.path, w, body)
			}
		}
		for _, w := range c.mustNotBe {
			if strings.Contains(body, w) {
				t.Errorf("%s shows %s to a caller limited to mine*:\n%s", c.path, w, body)
			}
		}
	}
}

// The header learns who the caller is; no credential is needed where
// the gateway serves callers without one.
func TestMe(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, fakeViews{})
	_, body := e.do(t, "GET", "/ui/api/me", limitedTok)
	var me struct {
		Name    string   `json:"name"`
		Kind    string   `json:"kind"`
		Scopes  []string `json:"scopes"`
		Servers []string `json:"servers"`
		Search  bool     `json:"search"`
		StepMs  int64    `json:"step_ms"`
	}
	if err := json.Unmarshal([]byte(body), &me); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if me.Name != "limited" || me.Kind != "token" || len(me.Scopes) != 3 || strings.Join(me.Servers, ",") != "mine*" || me.Search || me.StepMs != 5000 {
		t.Errorf("me = %+v", me)
	}
}

// Where the gateway serves callers without a credential the data routes
// answer without one, so the page opens with no token box: a loopback
// gateway without tokens (every scope), one with allow_anonymous beside
// tokens (reading only); elsewhere the answer is 401, which brings the
// box up.
func TestNoTokenWhereNoneIsNeeded(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		authn  *auth.HTTP
		status int
		who    string
	}{
		{"loopback without tokens", &auth.HTTP{Auth: auth.NewAuthenticator(t.Context(), config.Auth{}, auth.Options{}), Loopback: true}, 200, `"name":"local"`},
		{"allow_anonymous beside tokens", &auth.HTTP{Auth: auth.NewAuthenticator(t.Context(), config.Auth{Tokens: []config.Token{
			{Name: "admin", SHA256: sha256.Sum256([]byte(adminTok)), Scopes: auth.AllScopes}}}, auth.Options{}), AllowAnonymous: true}, 200,
			`"kind":"anonymous","name":"anonymous","scopes":["hangar:read"]`},
		{"tokens only", nil, 401, ""},
	} {
		e := newEndpointWith(t, someServers, c.authn)
		for _, path := range []string{"/ui/api/me", "/ui/api/servers"} {
			resp, body := e.do(t, "GET", path, "")
			if resp.StatusCode != c.status || (path == "/ui/api/me" && !strings.Contains(body, c.who)) {
				t.Errorf("%s: %s = %d %s", c.name, path, resp.StatusCode, body)
			}
		}
	}
}

// Try builds the form of each kind of thing from what the read model
// holds, says how Run calls it, and warns a caller the gateway will
// refuse.
func TestTryForms(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, someServers)
	for _, c := range []struct {
		path, token string
		want        []string
		not         []string
	}{
		{"/ui/api/try?server=math&tool=add", adminTok,
			[]string{`data-kind="tool"`, `data-method="tools/call"`, `data-call="math__add"`, `data-via=""`, `data-name="a"`, `data-type="number"`,
				`<span class="fname">a</span> <abbr class="req"`, `<span class="fname">b</span> <span class="ftype">`},
			[]string{"data-lacks"}},
		{"/ui/api/try?server=math&callable=math__add", adminTok, []string{`data-target="add"`}, nil},
		// Not on the front door: through hangar_call.
		{"/ui/api/try?server=math&tool=hidden", adminTok, []string{`data-call="hangar_call"`, `data-via="hangar_call"`, "It takes no arguments."}, nil},
		{"/ui/api/try?server=math&tool=add", readerTok, []string{"data-lacks", "Token missing required scope: hangar:call"}, nil},
		{"/ui/api/try?tool=hangar_stop", readerTok, []string{`data-call="hangar_stop"`, "of the gateway", "hangar:admin"}, nil},
		{"/ui/api/try?tool=hangar_list", readerTok, []string{`data-call="hangar_list"`}, []string{"data-lacks"}},
		{"/ui/api/try?server=math&prompt=greet", adminTok,
			[]string{`data-method="prompts/get"`, `data-call="math__greet"`, `data-name="who"`, `data-name="tone"`}, nil},
		{"/ui/api/try?server=math&template=" + "math://sq/%7Bn%7D%7B%3Fexact,base%7D", adminTok,
			[]string{`data-method="resources/read"`, `data-name="n"`, `data-name="exact"`, `data-name="base"`}, nil},
		{"/ui/api/try?server=math&resource=math://pi", adminTok, []string{`data-kind="resource"`, `data-call="math://pi"`, "Read"}, nil},
		{"/ui/api/try?server=math&tool=nope", adminTok, []string{"Nothing of that name"}, nil},
		{"/ui/api/try?server=nope&tool=add", adminTok, []string{"Nothing of that name"}, nil},
		{"/ui/api/try?tool=nope", adminTok, []string{"Nothing of that name"}, nil},
	} {
		resp, body := e.do(t, "GET", c.path, c.token)
		if resp.StatusCode != 200 {
			t.Errorf("%s = %d %s", c.path, resp.StatusCode, body)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %s:\n%s", c.path, w, body)
			}
		}
		for _, w := range c.not {
			if strings.Contains(body, w) {
				t.Errorf("%s holds %s:\n%s", c.path, w, body)
			}
		}
		// A control named like one of the form's properties (id, name,
		// action) would shadow it in the page's script: no name= at all.
		if strings.Contains(body, " name=") {
			t.Errorf("%s names a control:\n%s", c.path, body)
		}
	}
}

// The shell's nav lists every page of the table, and hands the table to
// the script as data.
func TestShellPages(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, fakeViews{})
	_, body := e.do(t, "GET", "/ui/", "")
	for _, want := range []string{`href="#servers"`, `href="#groups"`, `href="#replicas"`, `href="#gateway"`, `href="#pending"`,
		`href="#installs"`, `href="#policy"`, `href="#refusals"`, `data-pages="[{`, `&#34;frag&#34;:&#34;traffic/{id}&#34;`, `<script src="/ui/try.js" defer></script>`,
		`<dialog id="try"`, `id="search"`} {
		if !strings.Contains(body, want) {
			t.Errorf("shell lacks %s:\n%s", want, body)
		}
	}
}
