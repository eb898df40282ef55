package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestScaleOutDocs: the config samples of docs/scale-out.md load and mean
// what the page says, and its reference table's defaults and bounds are
// the loader's.
func TestScaleOutDocs(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "scale-out.md"))
	if err != nil {
		t.Fatal(err)
	}
	var samples []*Config
	for _, b := range strings.Split(string(doc), "```yaml\n")[1:] {
		sample, _, _ := strings.Cut(b, "```")
		if strings.HasPrefix(sample, " ") {
			continue // a fragment of a stack file, not a gateway config
		}
		cfg, err := Parse([]byte(sample), nil)
		if err != nil {
			t.Fatalf("a sample does not load: %v\n%s", err, sample)
		}
		samples = append(samples, cfg)
	}
	if len(samples) != 2 {
		t.Fatalf("%d config samples, want the store's and discovery's", len(samples))
	}
	if s := samples[0].Store; s.URL != "postgres://hangar@db:5432/hangar?sslmode=require" || s.PasswordFile != "/run/secrets/db" || !s.Shared() {
		t.Errorf("the store sample: %+v", s)
	}
	d := samples[1].Discovery
	want := Source{Type: "swarm", Mode: "authoritative", Filters: SourceFilters{Labels: map[string]string{"team": "agents"}, Networks: []string{"hangar_mcp"}}}
	if !d.Enabled || !d.AutoRegister || d.RefreshInterval != 30*time.Second || len(d.Sources) != 1 || !reflect.DeepEqual(d.Sources[0], want) {
		t.Errorf("the discovery sample: %+v", d)
	}

	// The reference table: refresh_interval_s defaults to 30 and takes 1
	// to 86400; a source's mode defaults to additive.
	if got := Default().Discovery.RefreshInterval; got != 30*time.Second {
		t.Errorf("refresh_interval_s defaults to %v", got)
	}
	cfg, err := Parse([]byte("discovery: {sources: [{type: swarm}]}\n"), nil)
	if err != nil || cfg.Discovery.Sources[0].Mode != "additive" {
		t.Errorf("a source's default mode: %+v, %v", cfg, err)
	}
	for _, v := range []string{"1", "86400"} {
		if _, err := Parse([]byte("discovery: {refresh_interval_s: "+v+"}\n"), nil); err != nil {
			t.Errorf("refresh_interval_s: %s: %v", v, err)
		}
	}
	for _, v := range []string{"0", "86401"} {
		if _, err := Parse([]byte("discovery: {refresh_interval_s: "+v+"}\n"), nil); err == nil {
			t.Errorf("refresh_interval_s: %s loads", v)
		}
	}
	// $HANGAR_STORE_URL wins over store.url.
	cfg, err = Parse([]byte("store: {url: \"postgres://a@file:5432/x\"}\n"), []string{"HANGAR_STORE_URL=postgres://b@env:5432/y"})
	if err != nil || cfg.Store.URL != "postgres://b@env:5432/y" {
		t.Errorf("$HANGAR_STORE_URL over store.url: %+v, %v", cfg.Store, err)
	}
}
