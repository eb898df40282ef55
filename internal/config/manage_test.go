package config

import (
	"errors"
	"slices"
	"testing"
)

func TestManageKeys(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("workspace: team-a\nruntimes:\n  npx: {image: node:22, env: {NPM_CONFIG_CACHE: /tmp/npm}}\n  uvx: {image: uv:1, network: none}\ninstall: {allow_subprocess: true}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Workspace != "team-a" || !cfg.Install.AllowSubprocess {
		t.Errorf("workspace %q install %+v", cfg.Workspace, cfg.Install)
	}
	npx, uvx := cfg.Runtimes["npx"], cfg.Runtimes["uvx"]
	if npx.Image != "node:22" || npx.Network != "bridge" || npx.Env["NPM_CONFIG_CACHE"] != "/tmp/npm" {
		t.Errorf("npx = %+v", npx)
	}
	if uvx.Image != "uv:1" || uvx.Network != "none" {
		t.Errorf("uvx = %+v", uvx)
	}

	def, err := Parse([]byte("{}\n"), nil)
	if err != nil || def.Workspace != "" || def.Runtimes != nil || def.Install.AllowSubprocess {
		t.Errorf("defaults: %+v %v", def, err)
	}

	for _, tt := range []struct {
		yaml string
		want []string
	}{
		{"workspace: ''\n", []string{"workspace: must not be empty"}},
		{"runtimes: {npx: {}}\n", []string{"runtimes.npx.image: required"}},
		{"runtimes: {npx: {image: n, network: host}}\n", []string{"runtimes.npx.network: host networking is not allowed: it bypasses container isolation"}},
		{"runtimes: {npx: {image: n, cmd: x}}\n", []string{"runtimes.npx.cmd: unknown key"}},
		{"install: {allow_subprocesses: true}\n", []string{"install.allow_subprocesses: unknown key"}},
	} {
		_, err := Parse([]byte(tt.yaml), nil)
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%q: err %v", tt.yaml, err)
			continue
		}
		var got []string
		for _, p := range ve.Problems {
			got = append(got, p.String())
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%q:\n got %q\nwant %q", tt.yaml, got, tt.want)
		}
	}
}
