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

// TestNotKeysAreNoOverride: every variable NotKeys names, set as the docs
// give it, leaves the config alone instead of failing as an unknown key
// (HANGAR_KEYSTORE_KEY did: "keystore_key: unknown key").
func TestNotKeysAreNoOverride(t *testing.T) {
	t.Parallel()
	values := map[string]string{
		KeystoreKeyEnv:  "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
		StoreURLEnv:     "postgres://hangar@db:5432/hangar",
		"HANGAR_LISTEN": "0.0.0.0:8080",
	}
	for name := range NotKeys {
		v := values[name]
		if v == "" {
			v = "x"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := Parse([]byte("mcp_servers: {}\n"), []string{name + "=" + v}); err != nil {
				t.Fatalf("%s=%s: %v", name, v, err)
			}
		})
	}
	for _, name := range []string{KeystoreKeyEnv, "HANGAR_TOKEN", "HANGAR_TOKEN_FILE", "HANGAR_REPLICA", "HANGAR_ADVERTISE_URL"} {
		if !CommandEnv[name] {
			t.Errorf("%s is not in NotKeys", name)
		}
	}
}
