package policy

import (
	"encoding/json"
	"testing"
)

// fuzzRules read arguments every way a rule can: numbers, strings,
// nested objects and lists, presence, optional values, loops, sizes,
// regular expressions and conversions.
var fuzzRules = []Rule{
	{Name: "amount", Effect: Deny, When: `args.amount > 100`},
	{Name: "env", Effect: Deny, When: `has(args.env) && args.env == "prod"`},
	{Name: "nested", Effect: Deny, When: `args.a.b[1].c == 3`},
	{Name: "items", Effect: Deny, When: `args.items.exists(i, i.sku == "GPU" && i.qty > 10)`},
	{Name: "optional", Effect: Deny, When: `args.?to.orValue("").endsWith("@evil.example")`},
	{Name: "size", Effect: Deny, When: `size(args) > 20 || size(args.?list.orValue([])) > 1000`},
	{Name: "regex", Effect: Deny, When: `string(args.?path.orValue("")).matches("^/etc/")`},
	{Name: "convert", Effect: Deny, When: `int(args.?n.orValue(0)) == 7`},
	{Name: "flag", Effect: Deny, When: `args.?dry_run.orValue(true)`},
	{Name: "dev", Effect: Allow, When: `args.?env.orValue("dev") == "dev"`},
}

// FuzzArgs feeds any bytes as a call's arguments to every rule alone:
// no panic, and a decision whose rule failed is a refusal by that rule.
// The seed corpus is testdata/fuzz/FuzzArgs, replayed by go test.
func FuzzArgs(f *testing.F) {
	engines := make([]*Engine, len(fuzzRules))
	for i, r := range fuzzRules {
		p, err := Compile(Spec{Rules: []Rule{r}})
		if err != nil {
			f.Fatal(err)
		}
		engines[i] = NewEngine(nil)
		engines[i].Set(p)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for i, e := range engines {
			r := fuzzRules[i]
			d := e.Decide(t.Context(), oncall, call("s", "t", string(raw)))
			if r.Effect == Deny && d.Err != nil && (d.Allowed || d.Rule != r.Name) {
				t.Fatalf("%s on %q: failed but %+v", r.Name, raw, d)
			}
			if r.Effect == Allow && d.Rule == r.Name && d.Err != nil {
				t.Fatalf("%s on %q: allowed by a rule that failed: %+v", r.Name, raw, d)
			}
			if !json.Valid(raw) && len(raw) > 0 && r.Effect == Deny && d.Allowed {
				t.Fatalf("%s on %q: arguments that are not JSON were allowed", r.Name, raw)
			}
			_ = e.Hidden(oncall, call("s", "t", string(raw)))
		}
	})
}
