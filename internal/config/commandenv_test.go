package config

import "testing"

func TestCommandEnvIsNotAnOverride(t *testing.T) {
	t.Parallel()
	env := []string{"HANGAR_LISTEN=0.0.0.0:8080", "HANGAR_INSTANCE=x", "HANGAR_ALLOWED_ORIGINS=*", "HANGAR_URL=http://h/mcp"}
	if _, err := Parse([]byte("mcp_servers: {}\n"), env); err != nil {
		t.Fatalf("command-line variables were taken as config keys: %v", err)
	}
	if _, err := Parse([]byte("mcp_servers: {}\n"), []string{"HANGAR_LISTN=x"}); err == nil {
		t.Fatal("a misspelt variable was accepted; want an unknown key error")
	}
}
