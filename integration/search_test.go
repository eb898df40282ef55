package integration

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFrontDoorSearchMode: with front_door.discovery search a gateway
// over real containers lists the pinned tool and hangar_find_tools but not
// the rest; hangar_find_tools ranks the testkit's tools, names its server
// with its summary; a found name answers when called unlisted.
func TestFrontDoorSearchMode(t *testing.T) {
	g := startGateway(t, `
front_door: {discovery: search}
mcp_servers:
  kit:
    mode: docker
    image: mcp-hangar/testkit:dev
    start_timeout_s: 30
    summary: "Testkit tools: echo, progress, sampling"
  pin:
    mode: docker
    image: mcp-hangar/testkit:dev
    start_timeout_s: 30
    pinned: [echo]
`)
	c := newRawClient(t, g.MCPURL)
	s := connect(t, g.MCPURL)
	s.mustCall(t, "hangar_start", map[string]any{"mcp_server": "kit"})
	s.mustCall(t, "hangar_start", map[string]any{"mcp_server": "pin"})
	c.waitListed(t, "pin__echo")
	if names := c.toolNames(t); !slices.Equal(names, []string{"pin__echo"}) {
		t.Errorf("provider tools listed in search mode: %v", names)
	}
	var list struct {
		Tools []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(c.rpc(t, "tools/list", `{}`), &list); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list.Tools, func(x struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}) bool {
		return x.Name == "hangar_find_tools"
	})
	if i < 0 || !strings.Contains(list.Tools[i].Description, "- kit (") || !strings.Contains(list.Tools[i].Description, "Testkit tools: echo, progress, sampling") {
		t.Fatalf("hangar_find_tools missing or without kit's summary: %+v", list.Tools)
	}

	var found []string
	waitFor(t, 15*time.Second, "kit__progress found", func() bool {
		m := s.mustCall(t, "hangar_find_tools", map[string]any{"query": "report progress steps", "limit": 3})
		found = nil
		matches, _ := m["matches"].([]any)
		for _, x := range matches {
			found = append(found, x.(map[string]any)["name"].(string))
		}
		return len(found) > 0 && found[0] == "kit__progress"
	})
	res := c.rpc(t, "tools/call", `{"name":"kit__echo","arguments":{"text":"unlisted but callable"}}`)
	if !strings.Contains(string(res), "unlisted but callable") || strings.Contains(string(res), `"isError":true`) {
		t.Errorf("kit__echo by name: %s", res)
	}
}
