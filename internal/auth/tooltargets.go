package auth

import (
	"encoding/json"
	"strings"
)

// targetKeys are the arguments of hangar_* tools that name a provider or
// group the tool acts on: mcp_server, group, and hangar_warm's
// comma-separated mcp_servers. Every one named must be within the
// caller's servers, not just the first (a call naming a group it may not
// reach beside a server it may must not pass on the server's word).
var targetKeys = []string{"mcp_server", "group", "mcp_servers"}

// Targets lists the providers and groups a hangar_* call names, in
// targetKeys order; nil when it names none.
func Targets(args any) []string {
	m, _ := args.(map[string]any)
	var out []string
	for _, k := range targetKeys {
		s, ok := m[k].(string)
		if !ok || s == "" {
			continue
		}
		if k != "mcp_servers" {
			out = append(out, s)
			continue
		}
		for _, id := range strings.Split(s, ",") {
			if id = strings.TrimSpace(id); id != "" {
				out = append(out, id)
			}
		}
	}
	return out
}

// CheckTool is the refusal for the caller calling tool with args, or nil.
// A front-door tool's server is checked by the front door's own filter,
// which mcp-go applies at tools/call too.
func CheckTool(id Identity, tool string, args any) *Error {
	if !GatewayTool(tool) {
		return id.Check(ToolScope(tool), "")
	}
	return CheckTargets(id, ToolScope(tool), Targets(args))
}

// CheckTargets is the refusal of scope or of any of targets, or nil. The
// answer depends on the names and the caller's patterns only, never on
// whether a server exists: "not yours" and "no such server" read alike.
func CheckTargets(id Identity, scope string, targets []string) *Error {
	if e := id.Check(scope, ""); e != nil {
		return e
	}
	for _, t := range targets {
		if e := id.Check("", t); e != nil {
			return e
		}
	}
	return nil
}

// RawTargets is Targets for raw JSON arguments. Keys are matched
// exactly, as the handler reads them (a struct would match them in any
// case), and only the targets' values are decoded (hangar_call's calls
// may be large).
func RawTargets(raw json.RawMessage) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	args := map[string]any{}
	for _, k := range targetKeys {
		var s string
		if json.Unmarshal(m[k], &s) == nil {
			args[k] = s
		}
	}
	return Targets(args)
}
