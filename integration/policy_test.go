package integration

import (
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/app"
	"github.com/mcp-hangar/hangar/internal/auth"
)

// TestPolicyEndToEnd: the policy over calls on the whole gateway (app
// wiring, a real math container), configured as docs/policy.md shows: a
// rule on arguments refuses a call by name with -32002 naming the rule; a
// server's own rule is named "<server>/<rule>"; a rule that needs no
// argument hides the tool; hangar_call refuses per call; hangar_details'
// audit names the rule; and hangar config check refuses a broken rule
// with its key path.
func TestPolicyEndToEnd(t *testing.T) {
	const agentTok = "hgr_agent-token-for-policy-e2e"
	path := writeConfig(t, `
front_door: {prefetch: true}
mcp_servers:
  math:
    mode: docker
    image: mcp-hangar/math:dev
    start_timeout_s: 30
    policy:
      rules:
        - {name: no-zero, effect: deny, when: 'tool.name == "divide" && args.b == 0', message: dividing by zero is not allowed}
auth:
  tokens:
    - {name: agent, token_sha256: "`+auth.HashHex(agentTok)+`", scopes: [hangar:read, hangar:call], groups: [interns]}
policy:
  rules:
    - name: interns-add-only
      effect: deny
      when: '"interns" in identity.groups && tool.name == "subtract"'
    - name: small-numbers
      effect: deny
      when: 'tool.name == "multiply" && (args.a > 1000 || args.b > 1000)'
      message: multiply numbers up to 1000
`)
	g := startGatewayFile(t, path, app.Options{})
	c := newRawClientWith(t, g.MCPURL, agentTok)
	c.waitListed(t, "math__add") // the front door's prefetch read math's tools
	if names := c.toolNames(t); slices.Contains(names, "math__subtract") || !slices.Contains(names, "math__multiply") {
		t.Errorf("tools/list: %v (subtract is hidden from interns, multiply is not)", names)
	}

	call := func(tool, args string) rawAnswer {
		return c.post(t, "tools/call", `{"name":"`+tool+`","arguments":`+args+`}`)
	}
	if a := call("math__multiply", `{"a":6,"b":7}`); a.Error != nil || !strings.Contains(string(a.Result), "42") {
		t.Errorf("6×7: %+v %s", a.Error, a.Result)
	}
	for _, tc := range []struct{ tool, args, msg string }{
		{"math__multiply", `{"a":5000,"b":2}`, `Forbidden by policy rule "small-numbers": multiply numbers up to 1000`},
		{"math__multiply", `{"a":2,"b":1000.5}`, `Forbidden by policy rule "small-numbers": multiply numbers up to 1000`},
		{"math__divide", `{"a":1,"b":0}`, `Forbidden by policy rule "math/no-zero": dividing by zero is not allowed`},
		{"math__subtract", `{"a":1,"b":0}`, `Forbidden by policy rule "interns-add-only"`},
	} {
		a := call(tc.tool, tc.args)
		if a.Error == nil || a.Error.Code != auth.CodeInsufficientScope || a.Error.Message != tc.msg || a.Status != 200 {
			t.Errorf("%s %s: HTTP %d %+v, want -32002 %q", tc.tool, tc.args, a.Status, a.Error, tc.msg)
		}
	}
	res := c.rpc(t, "tools/call", `{"name":"hangar_call","arguments":{"calls":[{"mcp_server":"math","tool":"divide","arguments":{"a":1,"b":0}}]}}`)
	if !strings.Contains(string(res), `\"error_type\":\"forbidden\"`) || !strings.Contains(string(res), `math/no-zero`) {
		t.Errorf("hangar_call: %s", res)
	}

	// hangar_details' audit names the rules (the audit writer's queue
	// stores entries a moment later).
	rules := map[string]int{}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var details struct {
			StructuredContent struct {
				RecentAudit []struct {
					Allowed bool   `json:"allowed"`
					Rule    string `json:"rule"`
				} `json:"recent_audit"`
			} `json:"structuredContent"`
		}
		if err := json.Unmarshal(c.rpc(t, "tools/call", `{"name":"hangar_details","arguments":{"mcp_server":"math"}}`), &details); err != nil {
			t.Fatal(err)
		}
		clear(rules)
		for _, e := range details.StructuredContent.RecentAudit {
			if !e.Allowed {
				rules[e.Rule]++
			}
		}
		if rules["small-numbers"] == 2 && rules["math/no-zero"] == 2 && rules["interns-add-only"] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("refusals in hangar_details' audit by rule: %v", rules)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	// docs/policy.md's walkthrough: hangar call, allowed and refused.
	out, err := exec.Command(hangarBin, "call", "--url", g.MCPURL, "--token", agentTok, "math__multiply", `{"a": 6, "b": 7}`).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "42" {
		t.Errorf("hangar call 6×7: %v %s", err, out)
	}
	out, err = exec.Command(hangarBin, "call", "--url", g.MCPURL, "--token", agentTok, "math__multiply", `{"a": 5000, "b": 2}`).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 ||
		!strings.Contains(string(out), `hangar: call math__multiply: Forbidden by policy rule "small-numbers": multiply numbers up to 1000`) {
		t.Errorf("hangar call 5000×2: %v %s", err, out)
	}

	// docs/policy.md's first rule, misspelt: hangar config check refuses it.
	broken := writeConfig(t, `
mcp_servers:
  math:
    mode: docker
    image: mcp-hangar/math:dev
policy:
  rules:
    - name: small-numbers
      effect: deny
      when: 'tol.name == "multiply" && (args.a > 1000 || args.b > 1000)'
      message: multiply numbers up to 1000
`)
	out, err = exec.Command(hangarBin, "config", "check", broken).CombinedOutput()
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.HasPrefix(string(out), "hangar: policy.rules[0].when: 1:1: undeclared reference to 'tol'\n") {
		t.Errorf("hangar config check of a broken rule: %v\n%s", err, out)
	}
	t.Logf("hangar config check:\n%s", out)
}
