package gateway

import (
	"encoding/json"
	"testing"
)

// hangar_health's answer is a struct for speed; its JSON must be byte for
// byte what the maps it replaced gave (encoding/json sorts map keys).
func TestHealthAnswerEncodesAsTheMaps(t *testing.T) {
	t.Parallel()
	byState := map[string]int{"cold": 3, "ready": 2, "degraded": 1, "dead": 0}
	groups := map[string]int{"cold": 0, "healthy": 1, "degraded": 0, "unavailable": 0}
	docker := map[string]any{"available": true, "error": nil}
	store := map[string]any{"ok": true, "path": "/data/hangar.db"}
	for _, st := range []map[string]any{store, nil} {
		var a healthAnswer
		a.Docker, a.Status, a.Store = docker, "healthy", st
		a.Groups.ByState, a.Groups.HealthyMembers, a.Groups.Total, a.Groups.TotalMembers = groups, 2, 1, 3
		a.MCPServers.ByState, a.MCPServers.Total = byState, 6
		a.Security.RateLimiting.ActiveBuckets, a.Security.RateLimiting.Enabled = 4, true
		a.Security.RateLimiting.Config.Burst, a.Security.RateLimiting.Config.RPS = 20, 2.5
		want := map[string]any{
			"status":      "healthy",
			"mcp_servers": map[string]any{"total": 6, "by_state": byState},
			"groups":      map[string]any{"total": 1, "by_state": groups, "total_members": 3, "healthy_members": 2},
			"security": map[string]any{"rate_limiting": map[string]any{
				"enabled": true, "active_buckets": 4, "config": map[string]any{"rps": 2.5, "burst": 20},
			}},
			"docker": docker,
			"store":  st,
		}
		got, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := json.Marshal(want)
		if string(got) != string(w) {
			t.Errorf("health answer\n got %s\nwant %s", got, w)
		}
	}
}
