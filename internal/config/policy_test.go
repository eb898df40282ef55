package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/policy"
)

func TestParsePolicy(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, dockerMath+`    policy:
      default: deny
      rules:
        - {name: oncall, effect: allow, when: '"oncall" in identity.groups'}
policy:
  default: allow
  rules:
    - name: no-prod-deletes
      effect: deny
      when: 'tool.name.startsWith("delete") && args.env == "prod"'
      message: deleting in prod needs a change ticket
    - {name: everyone, effect: allow, when: 'true'}
`)
	want := policy.Spec{Default: policy.Allow, Rules: []policy.Rule{
		{Name: "no-prod-deletes", Effect: policy.Deny, When: `tool.name.startsWith("delete") && args.env == "prod"`, Message: "deleting in prod needs a change ticket"},
		{Name: "everyone", Effect: policy.Allow, When: "true"},
	}}
	if !reflect.DeepEqual(cfg.Policy, want) {
		t.Errorf("policy = %+v", cfg.Policy)
	}
	own := cfg.Servers["math"].Policy
	if own == nil || own.Default != policy.Deny || len(own.Rules) != 1 || own.Rules[0].Name != "oncall" {
		t.Errorf("math's policy = %+v", own)
	}
	if p := mustParse(t, dockerMath).Policy; p.Default != "" || len(p.Rules) != 0 {
		t.Errorf("no policy: %+v", p)
	}
}

// A rule that does not compile fails the load with its key path and
// CEL's message; so does every other mistake in a policy.
func TestParsePolicyProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml, path, msg string
	}{
		{"syntax error", "policy:\n  rules:\n    - {name: a, effect: allow, when: 'true'}\n    - {name: b, effect: allow, when: 'true'}\n    - {name: c, effect: allow, when: 'true'}\n    - {name: d, effect: deny, when: 'tool.name =='}\n",
			"policy.rules[3].when", "Syntax error"},
		{"unknown variable", "policy:\n  rules:\n    - {name: a, effect: deny, when: 'user.name == \"x\"'}\n", "policy.rules[0].when", "undeclared reference to 'user'"},
		{"unknown field", "policy:\n  rules:\n    - {name: a, effect: deny, when: 'identity.group == \"x\"'}\n", "policy.rules[0].when", "undefined field 'group'"},
		{"not a boolean", "policy:\n  rules:\n    - {name: a, effect: deny, when: 'tool.name'}\n", "policy.rules[0].when", "must be a boolean condition, but its result is of type string"},
		{"bad effect", "policy:\n  rules:\n    - {name: a, effect: block, when: 'true'}\n", "policy.rules[0].effect", `must be allow or deny (got "block")`},
		{"bad default", "policy:\n  default: maybe\n", "policy.default", "must be one of allow, deny"},
		{"unknown rule key", "policy:\n  rules:\n    - {name: a, effect: deny, when: 'true', if: x}\n", "policy.rules[0].if", "unknown key"},
		{"unknown policy key", "policy:\n  rule: []\n", "policy.rule", "unknown key"},
		{"a rule that is no mapping", "policy:\n  rules: [deny-all]\n", "policy.rules[0]", "must be a mapping"},
		{"a server's rule", dockerMath + "    policy:\n      rules:\n        - {name: a, effect: deny, when: 'tool.nme == \"x\"'}\n",
			"mcp_servers.math.policy.rules[0].when", "undefined field 'nme'"},
		{"a member's policy", "mcp_servers:\n  pool:\n    mode: group\n    members:\n      - {id: m1, mode: docker, image: img, policy: {default: deny}}\n",
			"mcp_servers.pool.members[0].policy", "not allowed in group members"},
		{"a token's groups", "auth:\n  tokens:\n    - {name: t, token: abcdefghijklmnopqrstuvwxyz, scopes: [hangar:call], groups: ['']}\n", "auth.tokens[0].groups[0]", "must not be empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.yaml), nil)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Parse: %v, want a validation error", err)
			}
			for _, p := range ve.Problems {
				if p.Path == tc.path && strings.Contains(p.Message, tc.msg) {
					return
				}
			}
			t.Errorf("problems:\n%v\nwant %s: …%s…", err, tc.path, tc.msg)
		})
	}
}

// The default is one HANGAR_ variable away, like every key.
func TestPolicyDefaultFromEnvironment(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, "policy:\n  rules:\n    - {name: a, effect: allow, when: 'true'}\n", "HANGAR_POLICY__DEFAULT=deny")
	if cfg.Policy.Default != policy.Deny || len(cfg.Policy.Rules) != 1 {
		t.Errorf("policy = %+v", cfg.Policy)
	}
	_, err := Parse([]byte(""), []string{"HANGAR_POLICY__DEFAULT=never"})
	if err == nil || !strings.Contains(err.Error(), "policy.default") || !strings.Contains(err.Error(), "HANGAR_POLICY__DEFAULT") {
		t.Errorf("a bad default from the environment: %v", err)
	}
}

func TestParseGroups(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `auth:
  tokens:
    - {name: t, token: abcdefghijklmnopqrstuvwxyz, scopes: [hangar:call], groups: [oncall, dev]}
  oidc: {issuer: "https://idp.example", audience: "https://hangar.example", jwks_url: "https://idp.example/jwks"}
`)
	if g := cfg.Auth.Tokens[0].Groups; !reflect.DeepEqual(g, []string{"oncall", "dev"}) {
		t.Errorf("token groups %v", g)
	}
	if cfg.Auth.OIDC.GroupsClaim != DefaultGroupsClaim {
		t.Errorf("groups claim %q", cfg.Auth.OIDC.GroupsClaim)
	}
	cfg = mustParse(t, `auth:
  oidc: {issuer: "https://idp.example", audience: "https://hangar.example", jwks_url: "https://idp.example/jwks", groups_claim: roles}
`)
	if cfg.Auth.OIDC.GroupsClaim != "roles" {
		t.Errorf("groups claim %q", cfg.Auth.OIDC.GroupsClaim)
	}
}

// Every YAML sample of docs/policy.md loads as it is shown.
func TestPolicyDocSamples(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "policy.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(doc), "```yaml\n")[1:]
	if len(blocks) < 4 {
		t.Fatalf("docs/policy.md has %d yaml samples", len(blocks))
	}
	for i, b := range blocks {
		sample, _, ok := strings.Cut(b, "```")
		if !ok {
			t.Fatalf("sample %d is not closed", i)
		}
		cfg, err := Parse([]byte(sample), nil)
		if err != nil {
			t.Errorf("sample %d does not load: %v\n%s", i, err, sample)
			continue
		}
		rules := len(cfg.Policy.Rules)
		for _, s := range cfg.Servers {
			if s.Policy != nil {
				rules += len(s.Policy.Rules)
			}
		}
		if rules == 0 {
			t.Errorf("sample %d has no rule:\n%s", i, sample)
		}
	}
}
