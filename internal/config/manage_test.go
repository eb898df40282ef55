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

	inst, err := Parse([]byte("install: {allowed_bind_roots: [/srv/mcp-data/], allowed_networks: [tools], allowed_env_file_roots: [/etc/mcp]}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := inst.Install.Access("/data"); !slices.Equal(p.BindRoots, []string{"/srv/mcp-data"}) || !slices.Equal(p.Networks, []string{"tools"}) ||
		!slices.Equal(p.EnvFileRoots, []string{"/etc/mcp"}) || p.DataDir != "/data" {
		t.Errorf("install access = %+v", p)
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
		{"runtimes: {bunx: {}}\n", []string{"runtimes.bunx.image: required: bunx has no default runtime image"}},
		{"runtimes: {npx: {image: ''}}\n", []string{"runtimes.npx.image: must not be empty"}},
		{"runtimes: {npx: {image: n, network: host}}\n", []string{"runtimes.npx.network: host networking is not allowed: it bypasses container isolation"}},
		{"runtimes: {npx: {image: n, cmd: x}}\n", []string{"runtimes.npx.cmd: unknown key"}},
		{"install: {allow_subprocesses: true}\n", []string{"install.allow_subprocesses: unknown key"}},
		{"install: {allowed_bind_roots: [srv/data]}\n", []string{`install.allowed_bind_roots[0]: must be an absolute path (got "srv/data")`}},
		{"install: {allowed_bind_roots: [/]}\n", []string{`install.allowed_bind_roots[0]: must not be / (the whole host) (got "/")`}},
		{"install: {allowed_bind_roots: [/srv/../]}\n", []string{`install.allowed_bind_roots[0]: must not be / (the whole host) (got "/srv/../")`}},
		{"install: {allowed_bind_roots: [/srv/a/../b]}\n", []string{`install.allowed_bind_roots[0]: must be a clean path (no ., .. or double slashes) (got "/srv/a/../b")`}},
		{"install: {allowed_bind_roots: [/var/lib]}\n", []string{`install.allowed_bind_roots[0]: cannot be allowed: it is or holds /var/lib/docker (got "/var/lib")`}},
		{"install: {allowed_env_file_roots: [/proc/1]}\n", []string{`install.allowed_env_file_roots[0]: cannot be allowed: it is or holds /proc (got "/proc/1")`}},
		{"install: {allowed_env_file_roots: /etc}\n", []string{`install.allowed_env_file_roots: must be a list of strings (got "/etc")`}},
		{"install: {allowed_networks: [host, 'container:x', ok-net]}\n", []string{`install.allowed_networks[0]: host networking is never allowed (got "host")`,
			`install.allowed_networks[1]: joining another container's network is never allowed (got "container:x")`}},
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
