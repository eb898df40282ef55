package policy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCompileProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		spec  Spec
		field string
		msg   string // contained in the message
	}{
		{"syntax error", Spec{Rules: []Rule{{Name: "r", Effect: Deny, When: `tool.name ==`}}}, "rules[0].when", "Syntax error"},
		{"unknown variable", Spec{Rules: []Rule{{Name: "ok", Effect: Allow, When: "true"}, {Name: "r", Effect: Deny, When: `idenity.name == "x"`}}},
			"rules[1].when", "undeclared reference to 'idenity'"},
		{"unknown field", Spec{Rules: []Rule{{Name: "r", Effect: Deny, When: `tool.nmae == "x"`}}}, "rules[0].when", "undefined field 'nmae'"},
		{"not a boolean", Spec{Rules: []Rule{{Name: "r", Effect: Deny, When: `size(tool.name) + 1`}}}, "rules[0].when", "must be a boolean condition, but its result is of type int"},
		{"a string", Spec{Rules: []Rule{{Name: "r", Effect: Deny, When: `tool.name`}}}, "rules[0].when", "of type string"},
		{"no condition", Spec{Rules: []Rule{{Name: "r", Effect: Deny}}}, "rules[0].when", "required"},
		{"no name", Spec{Rules: []Rule{{Effect: Deny, When: "true"}}}, "rules[0].name", "required"},
		{"bad name", Spec{Rules: []Rule{{Name: "no spaces", Effect: Deny, When: "true"}}}, "rules[0].name", "letters, digits"},
		{"duplicate name", Spec{Rules: []Rule{{Name: "r", Effect: Deny, When: "true"}, {Name: "r", Effect: Allow, When: "true"}}},
			"rules[1].name", `"r" is also the name of rules[0]`},
		{"no effect", Spec{Rules: []Rule{{Name: "r", When: "true"}}}, "rules[0].effect", "required"},
		{"bad effect", Spec{Rules: []Rule{{Name: "r", Effect: "block", When: "true"}}}, "rules[0].effect", `must be allow or deny (got "block")`},
		{"bad default", Spec{Default: "maybe"}, "default", `must be allow or deny (got "maybe")`},
		{"long message", Spec{Rules: []Rule{{Name: "r", Effect: Deny, When: "true", Message: strings.Repeat("x", 501)}}}, "rules[0].message", "at most 500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(tc.spec)
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("Compile: %v, want a *CompileError", err)
			}
			for _, p := range ce.Problems {
				if p.Field == tc.field && strings.Contains(p.Message, tc.msg) {
					return
				}
			}
			t.Fatalf("problems %+v, want %s: …%s…", ce.Problems, tc.field, tc.msg)
		})
	}
}

// The dyn-typed result of a JSON value is allowed: it is checked per
// call (a non-boolean fails closed).
func TestCompileAcceptsDynConditions(t *testing.T) {
	t.Parallel()
	p, err := Compile(Spec{Rules: []Rule{{Name: "flag", Effect: Deny, When: "args.dry_run"}}})
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(nil)
	e.Set(p)
	for _, tc := range []struct {
		args    string
		allowed bool
		err     string
	}{
		{`{"dry_run": false}`, true, ""},
		{`{"dry_run": true}`, false, ""},
		{`{"dry_run": "yes"}`, false, "not a boolean"},
	} {
		d := e.Decide(t.Context(), Subject{}, Action{Args: json.RawMessage(tc.args)})
		if d.Allowed != tc.allowed || errText(d.Err) != tc.err && !strings.Contains(errText(d.Err), tc.err) {
			t.Errorf("%s: %+v", tc.args, d)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

var (
	oncall = Subject{Name: "alice", Subject: "alice", Issuer: "https://idp.example", Scopes: []string{"hangar:call"},
		Groups: []string{"dev", "oncall"}, Claims: map[string]any{"dept": "ops", "groups": []any{"dev", "oncall"}, "level": float64(3)}}
	contractor = Subject{Name: "bob", Subject: "bob", Issuer: "https://idp.example", Scopes: []string{"hangar:call"},
		Groups: []string{"contractors"}, Claims: map[string]any{"dept": "sales"}}
	tokenCaller = Subject{Name: "ci", Subject: "ci", Scopes: []string{"hangar:call"}}
)

func call(server, tool, args string) Action {
	a := Action{Method: MethodToolsCall, Protocol: "2025-11-25", Server: Server{ID: server, Source: "config"},
		Tool: Tool{Name: tool, Callable: server + "__" + tool}}
	if args != "" {
		a.Args = json.RawMessage(args)
	}
	return a
}

// A Wednesday, 10:30 in Berlin.
var wednesday = time.Date(2026, 3, 4, 9, 30, 0, 0, time.UTC)

func TestDecide(t *testing.T) {
	t.Parallel()
	type check struct {
		sub     Subject
		a       Action
		allowed bool
		rule    string
		err     string // contained in Decision.Err
	}
	for _, tc := range []struct {
		name   string
		spec   Spec
		checks []check
	}{
		{"deny wins over allow", Spec{Rules: []Rule{
			{Name: "all", Effect: Allow, When: "true"},
			{Name: "no-deletes", Effect: Deny, When: `tool.name.startsWith("delete_")`, Message: "deleting needs a ticket"},
		}}, []check{
			{oncall, call("db", "delete_rows", ""), false, "no-deletes", ""},
			{oncall, call("db", "select", ""), true, "all", ""},
		}},
		{"default deny needs an allow", Spec{Default: Deny, Rules: []Rule{
			{Name: "math", Effect: Allow, When: `server.id == "math"`},
		}}, []check{
			{oncall, call("math", "add", ""), true, "math", ""},
			{oncall, call("db", "select", ""), false, "", ""},
		}},
		{"numbers compare across types", Spec{Rules: []Rule{
			{Name: "big", Effect: Deny, When: `args.amount > 100`},
		}}, []check{
			{oncall, call("pay", "send", `{"amount": 500}`), false, "big", ""},
			{oncall, call("pay", "send", `{"amount": 500.5}`), false, "big", ""},
			{oncall, call("pay", "send", `{"amount": 100}`), true, "", ""},
			{oncall, call("pay", "send", `{"amount": 99.99}`), true, "", ""},
			// A string is no number: the rule fails, closed.
			{oncall, call("pay", "send", `{"amount": "500"}`), false, "big", "no such overload"},
		}},
		{"equality of a JSON number and an integer", Spec{Rules: []Rule{
			{Name: "five", Effect: Deny, When: `args.n == 5`},
		}}, []check{
			{oncall, call("s", "t", `{"n": 5}`), false, "five", ""},
			{oncall, call("s", "t", `{"n": 5.0}`), false, "five", ""},
			{oncall, call("s", "t", `{"n": 6}`), true, "", ""},
		}},
		{"nested arguments", Spec{Rules: []Rule{
			{Name: "bulk", Effect: Deny, When: `args.order.items.exists(i, i.sku == "GPU" && i.qty > 10)`},
			{Name: "deep", Effect: Deny, When: `has(args.a) && args.a.b[1].c == "x"`},
		}}, []check{
			{oncall, call("shop", "order", `{"order": {"items": [{"sku": "CPU", "qty": 50}, {"sku": "GPU", "qty": 11}]}}`), false, "bulk", ""},
			{oncall, call("shop", "order", `{"order": {"items": [{"sku": "GPU", "qty": 10}]}}`), true, "", ""},
			{oncall, call("shop", "order", `{"order": {"items": []}, "a": {"b": [0, {"c": "x"}]}}`), false, "deep", ""},
		}},
		{"a missing argument fails a deny rule closed", Spec{Rules: []Rule{
			{Name: "prod", Effect: Deny, When: `args.env == "prod"`},
		}}, []check{
			{oncall, call("db", "q", `{"env": "prod"}`), false, "prod", ""},
			{oncall, call("db", "q", `{"env": "dev"}`), true, "", ""},
			{oncall, call("db", "q", `{}`), false, "prod", "no such key: env"},
			{oncall, call("db", "q", ""), false, "prod", "no such key: env"},
		}},
		{"a missing argument does not match an allow rule", Spec{Default: Deny, Rules: []Rule{
			{Name: "dev", Effect: Allow, When: `args.env == "dev"`},
		}}, []check{
			{oncall, call("db", "q", `{"env": "dev"}`), true, "dev", ""},
			{oncall, call("db", "q", `{}`), false, "", `rule "dev": no such key: env`},
		}},
		{"has and optional values read what may be missing", Spec{Rules: []Rule{
			{Name: "has", Effect: Deny, When: `has(args.env) && args.env == "prod"`},
			{Name: "opt", Effect: Deny, When: `args.?region.orValue("eu") == "us"`},
		}}, []check{
			{oncall, call("db", "q", `{}`), true, "", ""},
			{oncall, call("db", "q", `{"region": "us"}`), false, "opt", ""},
		}},
		{"arguments that are not an object", Spec{Rules: []Rule{
			{Name: "x", Effect: Deny, When: `has(args.x)`},
		}}, []check{
			{oncall, call("s", "t", `[1,2]`), false, "x", "not a JSON object"},
			{oncall, call("s", "t", `null`), true, "", ""},
		}},
		{"groups and claims", Spec{Default: Deny, Rules: []Rule{
			{Name: "oncall-restarts", Effect: Allow, When: `tool.name == "restart_service" && "oncall" in identity.groups`},
			{Name: "ops-dept", Effect: Allow, When: `tool.name == "status" && identity.claims.dept == "ops"`},
			{Name: "levels", Effect: Allow, When: `tool.name == "escalate" && identity.claims.level >= 3`},
		}}, []check{
			{oncall, call("ops", "restart_service", ""), true, "oncall-restarts", ""},
			{contractor, call("ops", "restart_service", ""), false, "", ""},
			{oncall, call("ops", "status", ""), true, "ops-dept", ""},
			{contractor, call("ops", "status", ""), false, "", ""},
			{oncall, call("ops", "escalate", ""), true, "levels", ""},
			// A static token has no claims: the allow rule fails (no such
			// key), which does not allow.
			{tokenCaller, call("ops", "status", ""), false, "", "no such key: dept"},
		}},
		{"who: name, subject, issuer, scopes", Spec{Rules: []Rule{
			{Name: "idp", Effect: Deny, When: `identity.issuer != "https://idp.example" && tool.name == "secrets"`},
			{Name: "bob", Effect: Deny, When: `identity.subject == "bob" && identity.name == "bob"`},
			{Name: "scope", Effect: Deny, When: `!("hangar:call" in identity.scopes)`},
		}}, []check{
			{tokenCaller, call("vault", "secrets", ""), false, "idp", ""},
			{oncall, call("vault", "secrets", ""), true, "", ""},
			{contractor, call("vault", "list", ""), false, "bob", ""},
			{Subject{Name: "reader", Scopes: []string{"hangar:read"}}, call("vault", "list", ""), false, "scope", ""},
		}},
		{"servers: source, labels, image", Spec{Rules: []Rule{
			{Name: "prod", Effect: Deny, When: `server.labels.?env.orValue("") == "prod" && tool.name.startsWith("drop")`},
			{Name: "hotload", Effect: Deny, When: `server.source == "hotload" && !("oncall" in identity.groups)`},
			{Name: "images", Effect: Deny, When: `!server.image.startsWith("registry.example/") && server.image != ""`},
		}}, []check{
			{oncall, withServer(call("db", "drop_table", ""), Server{ID: "db", Labels: map[string]string{"env": "prod"}}), false, "prod", ""},
			{oncall, withServer(call("db", "drop_table", ""), Server{ID: "db", Labels: map[string]string{"env": "dev"}}), true, "", ""},
			{oncall, withServer(call("db", "drop_table", ""), Server{ID: "db"}), true, "", ""},
			{contractor, withServer(call("x", "t", ""), Server{ID: "x", Source: "hotload"}), false, "hotload", ""},
			{oncall, withServer(call("x", "t", ""), Server{ID: "x", Image: "docker.io/evil"}), false, "images", ""},
			{oncall, withServer(call("x", "t", ""), Server{ID: "x", Image: "registry.example/x"}), true, "", ""},
		}},
		{"tool annotations", Spec{Rules: []Rule{
			{Name: "destructive", Effect: Deny, When: `tool.annotations.?destructiveHint.orValue(false) == true && !("oncall" in identity.groups)`},
		}}, []check{
			{contractor, withNotes(call("fs", "rm", ""), `{"destructiveHint": true}`), false, "destructive", ""},
			{contractor, withNotes(call("fs", "ls", ""), `{"readOnlyHint": true}`), true, "", ""},
			{contractor, call("fs", "cat", ""), true, "", ""},
			{oncall, withNotes(call("fs", "rm", ""), `{"destructiveHint": true}`), true, "", ""},
		}},
		{"resources, prompts and methods", Spec{Rules: []Rule{
			{Name: "secrets", Effect: Deny, When: `request.method == "resources/read" && resource.uri.startsWith("file:///etc/")`},
			{Name: "prompt", Effect: Deny, When: `request.method == "prompts/get" && prompt.name == "jailbreak"`},
		}}, []check{
			{oncall, Action{Method: MethodResourcesRead, Server: Server{ID: "fs"}, ResourceURI: "file:///etc/shadow"}, false, "secrets", ""},
			{oncall, Action{Method: MethodResourcesRead, Server: Server{ID: "fs"}, ResourceURI: "file:///tmp/x"}, true, "", ""},
			{oncall, Action{Method: MethodPromptsGet, Server: Server{ID: "p"}, PromptName: "jailbreak"}, false, "prompt", ""},
			{oncall, Action{Method: MethodPromptsGet, Server: Server{ID: "p"}, PromptName: "summary"}, true, "", ""},
		}},
		{"time, with a fixed clock", Spec{Rules: []Rule{
			{Name: "office-hours", Effect: Deny, Message: "contractors work 9 to 17, Monday to Friday",
				When: `"contractors" in identity.groups && (request.time.getHours("Europe/Berlin") < 9 || request.time.getHours("Europe/Berlin") >= 17 || request.time.getDayOfWeek("Europe/Berlin") in [0, 6])`},
		}}, []check{
			{contractor, at(call("s", "t", ""), wednesday), true, "", ""},
			{contractor, at(call("s", "t", ""), wednesday.Add(7*time.Hour)), false, "office-hours", ""},      // 17:30
			{contractor, at(call("s", "t", ""), wednesday.Add(3*24*time.Hour)), false, "office-hours", ""},   // Saturday
			{contractor, at(call("s", "t", ""), wednesday.Add(-150*time.Minute)), false, "office-hours", ""}, // 8:00 there
			{contractor, at(call("s", "t", ""), wednesday.Add(-90*time.Minute)), true, "", ""},               // 9:00 there
			{oncall, at(call("s", "t", ""), wednesday.Add(3*24*time.Hour)), true, "", ""},
		}},
		{"protocol", Spec{Rules: []Rule{
			{Name: "modern", Effect: Deny, When: `request.protocol < "2026-01-01"`},
		}}, []check{
			{oncall, call("s", "t", ""), false, "modern", ""},
			{oncall, proto(call("s", "t", ""), "2026-07-28"), true, "", ""},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := Compile(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			e := NewEngine(func() time.Time { return wednesday })
			e.Set(p)
			for i, c := range tc.checks {
				d := e.Decide(t.Context(), c.sub, c.a)
				if d.Allowed != c.allowed || d.Rule != c.rule || (c.err == "") != (d.Err == nil) || !strings.Contains(errText(d.Err), c.err) {
					t.Errorf("check %d (%s %s/%s %s): %+v, want allowed %v rule %q err %q", i, c.sub.Name, c.a.Server.ID, c.a.Tool.Name, c.a.Args, d, c.allowed, c.rule, c.err)
				}
				if !d.Evaluated {
					t.Errorf("check %d: not evaluated", i)
				}
			}
		})
	}
}

func withServer(a Action, s Server) Action { a.Server = s; return a }
func withNotes(a Action, notes string) Action {
	a.Tool.Annotations = json.RawMessage(notes)
	return a
}
func at(a Action, t time.Time) Action { a.Time = t; return a }
func proto(a Action, v string) Action { a.Protocol = v; return a }

// The edge of the hour, in the zone the rule names.
func TestOfficeHoursEdge(t *testing.T) {
	t.Parallel()
	p, err := Compile(Spec{Rules: []Rule{{Name: "early", Effect: Deny, When: `request.time.getHours("Europe/Berlin") < 9`}}})
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(nil)
	e.Set(p)
	if d := e.Decide(t.Context(), contractor, at(call("s", "t", ""), time.Date(2026, 3, 4, 7, 59, 0, 0, time.UTC))); d.Allowed {
		t.Errorf("8:59 in Berlin allowed: %+v", d)
	}
	if d := e.Decide(t.Context(), contractor, at(call("s", "t", ""), time.Date(2026, 3, 4, 8, 0, 0, 0, time.UTC))); !d.Allowed {
		t.Errorf("9:00 in Berlin refused: %+v", d)
	}
}

func TestNoPolicyAllowsWithoutEvaluating(t *testing.T) {
	t.Parallel()
	e := NewEngine(nil)
	if d := e.Decide(t.Context(), oncall, call("s", "t", "")); !d.Allowed || d.Evaluated || e.Active() {
		t.Errorf("no policy: %+v, active %v", d, e.Active())
	}
	p, err := Compile(Spec{Default: Allow})
	if err != nil {
		t.Fatal(err)
	}
	e.Set(p)
	if d := e.Decide(t.Context(), oncall, call("s", "t", "")); !d.Allowed || d.Evaluated || e.Active() {
		t.Errorf("empty default-allow policy: %+v, active %v", d, e.Active())
	}
	p, err = Compile(Spec{Default: Deny})
	if err != nil {
		t.Fatal(err)
	}
	e.Set(p)
	if d := e.Decide(t.Context(), oncall, call("s", "t", "")); d.Allowed || !e.Active() {
		t.Errorf("default deny: %+v, active %v", d, e.Active())
	}
}

// A server's own policy: in the config file it adds to the gateway's
// rules and its default replaces the gateway's; installed, it only
// narrows.
func TestServerPolicies(t *testing.T) {
	t.Parallel()
	gw, err := Compile(Spec{Default: Deny, Rules: []Rule{
		{Name: "math", Effect: Allow, When: `server.id == "math"`},
		{Name: "no-drops", Effect: Deny, When: `tool.name.startsWith("drop")`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(nil)
	e.Set(gw)
	dbPolicy := &Spec{Rules: []Rule{{Name: "oncall", Effect: Allow, When: `"oncall" in identity.groups`}}}
	openPolicy := &Spec{Default: Allow}
	installed := &Spec{Default: Allow, Rules: []Rule{
		{Name: "readers", Effect: Deny, When: `tool.name == "write"`, Message: "read only"},
		{Name: "anyone", Effect: Allow, When: "true"},
	}}
	for i, c := range []struct {
		sub     Subject
		a       Action
		allowed bool
		rule    string
	}{
		// A config server's allow rule opens it under the gateway's deny.
		{oncall, withServer(call("db", "select", ""), Server{ID: "db", Policy: dbPolicy}), true, "db/oncall"},
		{contractor, withServer(call("db", "select", ""), Server{ID: "db", Policy: dbPolicy}), false, ""},
		// The gateway's deny rules still apply.
		{oncall, withServer(call("db", "drop_table", ""), Server{ID: "db", Policy: dbPolicy}), false, "no-drops"},
		// A config server's default replaces the gateway's.
		{contractor, withServer(call("open", "x", ""), Server{ID: "open", Policy: openPolicy}), true, ""},
		// An installed server's allow rules cannot open what the gateway
		// refuses by default…
		{oncall, withServer(call("inst", "read", ""), Server{ID: "inst", Policy: installed, Installed: true}), false, ""},
		// …but its deny rules narrow what the gateway allows.
		{oncall, withServer(call("math", "write", ""), Server{ID: "math", Policy: installed, Installed: true}), false, "math/readers"},
		{oncall, withServer(call("math", "read", ""), Server{ID: "math", Policy: installed, Installed: true}), true, "math"},
	} {
		d := e.Decide(t.Context(), c.sub, c.a)
		if d.Allowed != c.allowed || d.Rule != c.rule {
			t.Errorf("check %d (%s on %s/%s): %+v, want allowed %v rule %q", i, c.sub.Name, c.a.Server.ID, c.a.Tool.Name, d, c.allowed, c.rule)
		}
	}
	if d := e.Decide(t.Context(), oncall, withServer(call("math", "write", ""), Server{ID: "math", Policy: installed, Installed: true})); d.Message != "read only" {
		t.Errorf("message %q", d.Message)
	}
}

// A server whose own policy does not compile (an install made by an
// older hangar, say) is refused, with the compile error.
func TestServerPolicyThatDoesNotCompileRefuses(t *testing.T) {
	t.Parallel()
	e := NewEngine(nil)
	bad := &Spec{Rules: []Rule{{Name: "r", Effect: Deny, When: "nope.x"}}}
	s := Server{ID: "x", Policy: bad, Installed: true}
	d := e.Decide(t.Context(), oncall, withServer(call("x", "t", ""), s))
	if d.Allowed || !errors.Is(d.Err, ErrServerPolicy) || !strings.Contains(d.Err.Error(), "undeclared reference to 'nope'") {
		t.Errorf("decision %+v", d)
	}
	if !e.Hidden(oncall, withServer(call("x", "t", ""), s)) {
		t.Error("tools of a server that refuses every call are listed")
	}
	if err := e.Prepare(s); !errors.Is(err, ErrServerPolicy) {
		t.Errorf("Prepare: %v", err)
	}
}

// A rule that loops over a huge argument is stopped, and fails closed.
func TestLoopsAreBounded(t *testing.T) {
	t.Parallel()
	p, err := Compile(Spec{Rules: []Rule{
		{Name: "quadratic", Effect: Deny, When: `args.items.exists(x, args.items.exists(y, x + y < 0.0))`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(nil)
	e.Set(p)
	items := make([]any, 20000)
	for i := range items {
		items[i] = float64(i)
	}
	raw, _ := json.Marshal(map[string]any{"items": items})
	began := time.Now()
	d := e.Decide(t.Context(), oncall, call("s", "t", string(raw)))
	took := time.Since(began)
	if d.Allowed || d.Rule != "quadratic" || !strings.Contains(errText(d.Err), "operation interrupted") {
		t.Fatalf("decision %+v", d)
	}
	// 4e8 iterations would take minutes; the deadline stops them at
	// EvalTimeout (the bound is generous: the machine may be loaded).
	if took > 2*time.Second {
		t.Errorf("the decision took %v", took)
	}
	t.Logf("interrupted after %v", took)
	// A small argument passes.
	if d := e.Decide(t.Context(), oncall, call("s", "t", `{"items":[1,2,3]}`)); !d.Allowed || d.Err != nil {
		t.Errorf("small: %+v", d)
	}
}

func TestHidden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		spec   Spec
		sub    Subject
		a      Action
		hidden bool
	}{
		{"no policy", Spec{}, oncall, call("db", "drop", ""), false},
		{"a deny rule on the tool alone", Spec{Rules: []Rule{{Name: "r", Effect: Deny, When: `tool.name.startsWith("drop")`}}}, oncall, call("db", "drop", ""), true},
		{"…another tool", Spec{Rules: []Rule{{Name: "r", Effect: Deny, When: `tool.name.startsWith("drop")`}}}, oncall, call("db", "select", ""), false},
		{"a deny rule on arguments", Spec{Rules: []Rule{{Name: "r", Effect: Deny, When: `tool.name == "drop" && args.env == "prod"`}}}, oncall, call("db", "drop", ""), false},
		{"arguments beside a condition true without them", Spec{Rules: []Rule{{Name: "r", Effect: Deny, When: `tool.name == "drop" || args.env == "prod"`}}}, oncall, call("db", "drop", ""), true},
		{"a deny rule on the caller", Spec{Rules: []Rule{{Name: "r", Effect: Deny, When: `"contractors" in identity.groups && server.id == "db"`}}}, contractor, call("db", "select", ""), true},
		{"…another caller", Spec{Rules: []Rule{{Name: "r", Effect: Deny, When: `"contractors" in identity.groups && server.id == "db"`}}}, oncall, call("db", "select", ""), false},
		{"a time rule is decided per call", Spec{Rules: []Rule{{Name: "r", Effect: Deny, When: `request.time.getHours() < 25`}}}, oncall, call("db", "select", ""), false},
		{"a protocol rule is decided per call", Spec{Rules: []Rule{{Name: "r", Effect: Deny, When: `request.protocol != ""`}}}, oncall, call("db", "select", ""), false},
		{"the method is known: tools/call", Spec{Rules: []Rule{{Name: "r", Effect: Deny, When: `request.method == "tools/call" && tool.name == "x"`}}}, oncall, call("db", "x", ""), true},
		{"annotations", Spec{Rules: []Rule{{Name: "r", Effect: Deny, When: `tool.annotations.?destructiveHint.orValue(false)`}}}, oncall, withNotes(call("fs", "rm", ""), `{"destructiveHint":true}`), true},
		{"a rule failing without arguments", Spec{Rules: []Rule{{Name: "r", Effect: Deny, When: `identity.claims.nope == 1`}}}, oncall, call("db", "select", ""), true},
		{"default deny, no allow for the tool", Spec{Default: Deny, Rules: []Rule{{Name: "r", Effect: Allow, When: `server.id == "math"`}}}, oncall, call("db", "select", ""), true},
		{"default deny, an allow for the tool", Spec{Default: Deny, Rules: []Rule{{Name: "r", Effect: Allow, When: `server.id == "math"`}}}, oncall, call("math", "add", ""), false},
		{"default deny, an allow on arguments", Spec{Default: Deny, Rules: []Rule{{Name: "r", Effect: Allow, When: `server.id == "math" && args.a < 10`}}}, oncall, call("math", "add", ""), false},
		{"default deny, an allow on arguments of another server", Spec{Default: Deny, Rules: []Rule{
			{Name: "a", Effect: Allow, When: `server.id == "math" && args.a < 10`},
			{Name: "b", Effect: Allow, When: `server.id == "db" && has(args.q)`}}}, oncall, call("fs", "ls", ""), true},
		{"default deny, a time allow", Spec{Default: Deny, Rules: []Rule{{Name: "r", Effect: Allow, When: `request.time.getHours() >= 9`}}}, oncall, call("math", "add", ""), false},
		{"many rules, one denies", Spec{Rules: []Rule{
			{Name: "a", Effect: Deny, When: `args.x == 1`},
			{Name: "b", Effect: Deny, When: `server.id == "db" && tool.name == "drop"`},
			{Name: "c", Effect: Deny, When: `request.time.getHours() == 3`}}}, oncall, call("db", "drop", ""), true},
		{"many rules, none denies without arguments", Spec{Rules: []Rule{
			{Name: "a", Effect: Deny, When: `args.x == 1`},
			{Name: "b", Effect: Deny, When: `server.id == "db" && tool.name == "drop"`},
			{Name: "c", Effect: Deny, When: `request.time.getHours() == 3`}}}, oncall, call("db", "select", ""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := Compile(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			e := NewEngine(nil)
			e.Set(p)
			if got := e.Hidden(tc.sub, tc.a); got != tc.hidden {
				t.Errorf("Hidden = %v, want %v", got, tc.hidden)
			}
		})
	}
}

// Hidden for an installed server: either layer hides.
func TestHiddenInstalled(t *testing.T) {
	t.Parallel()
	gw, err := Compile(Spec{Rules: []Rule{{Name: "g", Effect: Deny, When: `tool.name == "a"`}}})
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(nil)
	e.Set(gw)
	own := &Spec{Rules: []Rule{{Name: "o", Effect: Deny, When: `tool.name == "b"`}}}
	s := Server{ID: "x", Policy: own, Installed: true}
	for tool, hidden := range map[string]bool{"a": true, "b": true, "c": false} {
		if got := e.Hidden(oncall, withServer(call("x", tool, ""), s)); got != hidden {
			t.Errorf("%s: hidden %v", tool, got)
		}
	}
}

// Callers who differ only in what no rule reads share a view; the view
// changes with the policy.
func TestView(t *testing.T) {
	t.Parallel()
	e := NewEngine(nil)
	base := e.View(oncall)
	if base != e.View(contractor) {
		t.Error("without rules, views differ")
	}
	p, err := Compile(Spec{Rules: []Rule{{Name: "r", Effect: Deny, When: `"oncall" in identity.groups && tool.name == "x"`}}})
	if err != nil {
		t.Fatal(err)
	}
	e.Set(p)
	if e.View(oncall) == base {
		t.Error("the view did not change with the policy")
	}
	if e.View(oncall) == e.View(contractor) {
		t.Error("callers of other groups share a view")
	}
	sameGroups := contractor
	sameGroups.Name, sameGroups.Claims = "carol", map[string]any{"other": true}
	if e.View(sameGroups) != e.View(contractor) {
		t.Error("callers of the same groups have different views")
	}
	// A server policy that reads claims adds them to the view.
	before := e.View(sameGroups)
	if err := e.Prepare(Server{ID: "s", Policy: &Spec{Rules: []Rule{{Name: "c", Effect: Deny, When: `identity.claims.dept == "x"`}}}}); err != nil {
		t.Fatal(err)
	}
	if e.View(sameGroups) == before || e.View(sameGroups) == e.View(contractor) {
		t.Error("claims read by a server's rule do not tell views apart")
	}
}

func TestRulesAndDefault(t *testing.T) {
	t.Parallel()
	spec := Spec{Default: Deny, Rules: []Rule{{Name: "a", Effect: Allow, When: "true", Message: "m"}}}
	p, err := Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Rules(); len(got) != 1 || got[0] != spec.Rules[0] || p.Default() != Deny {
		t.Errorf("Rules %+v Default %q", got, p.Default())
	}
	var none *Policy
	if none.Rules() != nil || none.Default() != "" {
		t.Error("nil policy")
	}
}

func TestDecideIsCancelled(t *testing.T) {
	t.Parallel()
	p, err := Compile(Spec{Rules: []Rule{{Name: "loop", Effect: Deny, When: `args.items.exists(x, x > 5.0)`}}})
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(nil)
	e.Set(p)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	items := make([]any, 1000)
	for i := range items {
		items[i] = float64(0)
	}
	raw, _ := json.Marshal(map[string]any{"items": items})
	if d := e.Decide(ctx, oncall, call("s", "t", string(raw))); d.Allowed || d.Err == nil {
		t.Errorf("a cancelled decision: %+v", d)
	}
}

// Numbers compare across types in the checker too: an int and a double
// both typed (not JSON values) compare as a person expects.
func TestCrossTypeNumericComparisons(t *testing.T) {
	t.Parallel()
	p, err := Compile(Spec{Rules: []Rule{{Name: "long", Effect: Deny, When: `size(tool.name) > 4.5`}}})
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(nil)
	e.Set(p)
	if d := e.Decide(t.Context(), oncall, call("s", "abcde", "")); d.Allowed || d.Rule != "long" {
		t.Errorf("5 > 4.5: %+v", d)
	}
	if d := e.Decide(t.Context(), oncall, call("s", "abcd", "")); !d.Allowed {
		t.Errorf("4 > 4.5: %+v", d)
	}
}

// Claims read by name make the view; the claims every token has of its
// own (iat, exp) do not, unless a rule reads the claims whole.
func TestViewOfClaims(t *testing.T) {
	t.Parallel()
	ann := Subject{Name: "ann", Claims: map[string]any{"dept": "ops", "iat": 1.0}}
	annLater := Subject{Name: "ann", Claims: map[string]any{"dept": "ops", "iat": 2.0}}
	bob := Subject{Name: "bob", Claims: map[string]any{"dept": "sales", "iat": 1.0}}
	nobody := Subject{Name: "x", Claims: map[string]any{"iat": 1.0}}
	for _, tc := range []struct {
		when       string
		sameLater  bool // ann and annLater share a view
		sameBobAnn bool
	}{
		{`identity.claims.dept == "ops"`, true, false},
		{`has(identity.claims.dept)`, true, false},
		{`identity.claims.?dept.orValue("") == "ops"`, true, false},
		{`identity.claims["dept"] == "ops"`, false, false}, // read other than by name: the whole claims
		{`size(identity.claims) > 1`, false, false},
		{`identity.name == "ann"`, true, false},
		{`tool.name == "x"`, true, true},
	} {
		p, err := Compile(Spec{Rules: []Rule{{Name: "r", Effect: Deny, When: tc.when}}})
		if err != nil {
			t.Fatal(err)
		}
		e := NewEngine(nil)
		e.Set(p)
		if got := e.View(ann) == e.View(annLater); got != tc.sameLater {
			t.Errorf("%s: ann and ann later share a view: %v", tc.when, got)
		}
		if got := e.View(ann) == e.View(bob); got != tc.sameBobAnn {
			t.Errorf("%s: ann and bob share a view: %v", tc.when, got)
		}
		if tc.sameLater && !tc.sameBobAnn && e.View(nobody) == e.View(ann) {
			t.Errorf("%s: a caller without the claim shares ann's view", tc.when)
		}
	}
}
