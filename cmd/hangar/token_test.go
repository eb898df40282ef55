package main

import (
	"bytes"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
)

func TestTokenNew(t *testing.T) {
	var out bytes.Buffer
	if err := tokenCmd([]string{"new", "--name", "agent", "--scopes", "hangar:read,hangar:call", "--servers", "math,fs-*"}, &out); err != nil {
		t.Fatal(err)
	}
	tok := regexp.MustCompile(`hgr_[A-Za-z0-9_-]{43}`).FindString(out.String())
	if tok == "" || strings.Count(out.String(), tok) != 1 {
		t.Fatalf("the token must be printed exactly once:\n%s", out.String())
	}
	entry := out.String()[strings.Index(out.String(), "auth:"):]
	cfg, err := config.Parse([]byte(entry), nil)
	if err != nil {
		t.Fatalf("the printed entry does not load: %v\n%s", err, entry)
	}
	got := cfg.Auth.Tokens[0]
	if auth.HashHex(tok) != hex.EncodeToString(got.SHA256[:]) || got.Name != "agent" || len(got.Servers) != 2 {
		t.Errorf("entry %+v does not match the token", got)
	}
	for _, bad := range [][]string{{"new"}, {"new", "--name", "a", "--scopes", "hangar:write"}, {"old"}} {
		if err := tokenCmd(bad, &out); err == nil {
			t.Errorf("tokenCmd(%v) succeeded", bad)
		}
	}
}
