package preflight

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/config"
)

// fakeEngine knows a set of local images; anything else is not found,
// except images listed in broken, whose inspect fails otherwise.
type fakeEngine struct {
	images map[string]bool
	broken map[string]bool
	asked  []string
}

func (e *fakeEngine) ImageInspect(_ context.Context, image string, _ ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	e.asked = append(e.asked, image)
	switch {
	case e.broken[image]:
		return client.ImageInspectResult{}, errors.New("engine says 500")
	case e.images[image]:
		return client.ImageInspectResult{}, nil
	}
	return client.ImageInspectResult{}, fmt.Errorf("No such image: %s: %w", image, cerrdefs.ErrNotFound)
}

// fakeHost has a set of paths and symlinks (link → target).
type fakeHost struct {
	paths  map[string]bool
	links  map[string]string
	denied map[string]bool
}

func (h fakeHost) Stat(p string) (fs.FileInfo, error) {
	p = path.Clean(p)
	if t, ok := h.links[p]; ok {
		p = t
	}
	switch {
	case h.denied[p]:
		return nil, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrPermission}
	case h.paths[p]:
		return nil, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
}

func (h fakeHost) EvalSymlinks(p string) (string, error) {
	p = path.Clean(p)
	if t, ok := h.links[p]; ok {
		return t, nil
	}
	if h.paths[p] {
		return p, nil
	}
	return "", &fs.PathError{Op: "lstat", Path: p, Err: fs.ErrNotExist}
}

func parse(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml), nil)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

func TestRun(t *testing.T) {
	t.Parallel()
	host := fakeHost{
		paths:  map[string]bool{"/srv/data": true, "/var/run/docker.sock": true, "/etc/app": true, "/secret": true},
		links:  map[string]string{"/srv/sock": "/var/run/docker.sock", "/srv/data-link": "/srv/data"},
		denied: map[string]bool{"/secret": true},
	}
	engine := func() *fakeEngine {
		return &fakeEngine{images: map[string]bool{"good:1": true}, broken: map[string]bool{"broken:1": true}}
	}
	const noEngine = "cannot reach the Docker engine at unix:///nowhere.sock: connection refused"
	const noHost = "this command runs in a container, where host paths are not visible"
	tests := []struct {
		name        string
		yaml        string
		noEngine    bool
		noHost      bool
		wantProbs   []string
		wantSkipped []string
	}{
		{
			name: "all good",
			yaml: "mcp_servers:\n  fs: {mode: docker, image: good:1, volumes: [/srv/data:/data:ro, /srv/data-link:/l]}\n",
		},
		{
			name:      "missing bind source",
			yaml:      "mcp_servers:\n  fs: {mode: docker, image: good:1, volumes: [/etc/app:/app, /srv/nodata:/data]}\n",
			wantProbs: []string{"mcp_servers.fs.volumes[1]: source /srv/nodata does not exist on the host; create it or fix the path"},
		},
		{
			name:      "unreadable bind source",
			yaml:      "mcp_servers:\n  fs: {mode: docker, image: good:1, volumes: [/secret:/s]}\n",
			wantProbs: []string{"mcp_servers.fs.volumes[0]: source /secret cannot be checked: stat /secret: permission denied; make it readable by the gateway's user or fix the path"},
		},
		{
			name: "missing image",
			yaml: "mcp_servers:\n  math: {mode: docker, image: absent:1}\n",
			wantProbs: []string{"mcp_servers.math.image: image absent:1 is not present on the Docker engine; " +
				"build or pull it (docker pull absent:1), or fix the name"},
		},
		{
			name: "engine fails the inspect",
			yaml: "mcp_servers:\n  math: {mode: docker, image: broken:1}\n",
			wantProbs: []string{"mcp_servers.math.image: image broken:1 cannot be inspected: engine says 500; " +
				"check that the Docker engine is healthy and the name is valid"},
		},
		{
			name: "docker socket refused",
			yaml: "mcp_servers:\n  ci: {mode: docker, image: good:1, volumes: [/srv/data:/d, /var/run/docker.sock:/var/run/docker.sock]}\n",
			wantProbs: []string{"mcp_servers.ci.volumes[1]: mounts the Docker socket (or a directory holding it), which gives the provider control of the engine; " +
				"remove the volume, or set mcp_servers.ci.allow_docker_socket: true if the provider must drive Docker"},
		},
		{
			name: "socket spellings and its directory",
			yaml: "mcp_servers:\n  ci: {mode: docker, image: good:1, volumes: [/run/docker.sock/./:/s, /var/run:/r:ro]}\n",
			wantProbs: []string{
				"mcp_servers.ci.volumes[0]: mounts the Docker socket (or a directory holding it), which gives the provider control of the engine; " +
					"remove the volume, or set mcp_servers.ci.allow_docker_socket: true if the provider must drive Docker",
				"mcp_servers.ci.volumes[1]: mounts the Docker socket (or a directory holding it), which gives the provider control of the engine; " +
					"remove the volume, or set mcp_servers.ci.allow_docker_socket: true if the provider must drive Docker",
				"mcp_servers.ci.volumes[0]: source /run/docker.sock/./ does not exist on the host; create it or fix the path",
				"mcp_servers.ci.volumes[1]: source /var/run does not exist on the host; create it or fix the path",
			},
		},
		{
			name: "socket behind a symlink",
			yaml: "mcp_servers:\n  ci: {mode: docker, image: good:1, volumes: [/srv/sock:/s]}\n",
			wantProbs: []string{"mcp_servers.ci.volumes[0]: source /srv/sock is a link to /var/run/docker.sock, the Docker socket (or a directory holding it), " +
				"which gives the provider control of the engine; remove the volume, or set mcp_servers.ci.allow_docker_socket: true if the provider must drive Docker"},
		},
		{
			name: "socket allowed",
			yaml: "mcp_servers:\n  ci: {mode: docker, image: good:1, allow_docker_socket: true, volumes: [/var/run/docker.sock:/var/run/docker.sock, /srv/sock:/s]}\n",
		},
		{
			name: "group member paths",
			yaml: "mcp_servers:\n  pool:\n    mode: group\n    members:\n      - {id: a, mode: docker, image: good:1}\n" +
				"      - {id: b, mode: remote, endpoint: 'https://b'}\n      - {id: c, mode: docker, image: absent:2, volumes: [/nope:/n]}\n",
			wantProbs: []string{
				"mcp_servers.pool.members[2].volumes[0]: source /nope does not exist on the host; create it or fix the path",
				"mcp_servers.pool.members[2].image: image absent:2 is not present on the Docker engine; " +
					"build or pull it (docker pull absent:2), or fix the name",
			},
		},
		{
			name: "servers in sorted order, other modes ignored",
			yaml: "mcp_servers:\n  zed: {mode: docker, image: absent:z}\n  api: {mode: remote, endpoint: 'https://x'}\n" +
				"  sub: {mode: subprocess, command: [x]}\n  alpha: {mode: container, image: absent:a}\n",
			wantProbs: []string{
				"mcp_servers.alpha.image: image absent:a is not present on the Docker engine; build or pull it (docker pull absent:a), or fix the name",
				"mcp_servers.zed.image: image absent:z is not present on the Docker engine; build or pull it (docker pull absent:z), or fix the name",
			},
		},
		{
			name:        "engine unreachable: image skipped, the rest still checked",
			yaml:        "mcp_servers:\n  fs: {mode: docker, image: absent:1, volumes: [/var/run/docker.sock:/s, /srv/nodata:/d]}\n",
			noEngine:    true,
			wantSkipped: []string{"image presence not checked: " + noEngine},
			wantProbs: []string{
				"mcp_servers.fs.volumes[0]: mounts the Docker socket (or a directory holding it), which gives the provider control of the engine; " +
					"remove the volume, or set mcp_servers.fs.allow_docker_socket: true if the provider must drive Docker",
				"mcp_servers.fs.volumes[1]: source /srv/nodata does not exist on the host; create it or fix the path",
			},
		},
		{
			name:        "host not visible",
			yaml:        "mcp_servers:\n  fs: {mode: docker, image: good:1, volumes: [/srv/nodata:/d]}\n",
			noHost:      true,
			wantSkipped: []string{"bind-mount sources not checked: " + noHost},
		},
		{
			name: "a package server's image is built from its runner's runtime image, which must be there",
			yaml: "runtimes: {npx: {image: absent:node}, uvx: {image: good:1}}\nmcp_servers:\n" +
				"  pkg: {mode: docker, package: {type: npm, name: x}}\n  py: {mode: docker, package: {type: pypi, name: y}}\n",
			wantProbs: []string{
				"mcp_servers.pkg.package.runner: image absent:node is not present on the Docker engine; build or pull it (docker pull absent:node), or fix the name",
			},
		},
		{
			name:     "no docker servers: nothing to skip",
			yaml:     "mcp_servers:\n  api: {mode: remote, endpoint: 'https://x'}\n",
			noEngine: true, noHost: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := Env{Engine: engine(), Host: host}
			if tt.noEngine {
				env.Engine, env.NoEngine = nil, noEngine
			}
			if tt.noHost {
				env.Host, env.NoHost = nil, noHost
			}
			cfg := parse(t, tt.yaml)
			env.Runtimes = cfg.Runtimes
			r := Run(t.Context(), cfg, env, Checks())
			var got []string
			for _, p := range r.Problems {
				got = append(got, p.String())
			}
			if !reflect.DeepEqual(got, tt.wantProbs) {
				t.Errorf("problems:\n got  %q\n want %q", got, tt.wantProbs)
			}
			if !reflect.DeepEqual(r.Skipped, tt.wantSkipped) {
				t.Errorf("skipped:\n got  %q\n want %q", r.Skipped, tt.wantSkipped)
			}
			for _, p := range got {
				if strings.Count(p, "\n") > 0 || !strings.HasPrefix(p, "mcp_servers.") {
					t.Errorf("problem %q: want one line starting with its key path", p)
				}
			}
		})
	}
}

// A check list is open: a check added by later work runs for every docker
// server, and one that needs the engine is skipped without it.
func TestRunExtraCheck(t *testing.T) {
	t.Parallel()
	cfg := parse(t, "mcp_servers:\n  a: {mode: docker, image: good:1}\n  b: {mode: docker, image: good:2}\n")
	var seen []string
	extra := Check{Name: "image pullability", Needs: NeedsEngine, Run: func(_ context.Context, _ Env, tg Target) []Problem {
		seen = append(seen, tg.Path)
		return []Problem{{Path: tg.Path + ".image", Msg: "m", Fix: "f"}}
	}}
	r := Run(t.Context(), cfg, Env{Engine: &fakeEngine{}, Host: fakeHost{}}, []Check{extra})
	if !reflect.DeepEqual(seen, []string{"mcp_servers.a", "mcp_servers.b"}) || len(r.Problems) != 2 || r.Checked != 2 {
		t.Errorf("extra check saw %v, report %+v", seen, r)
	}
	seen = nil
	r = Run(t.Context(), cfg, Env{NoEngine: "down"}, []Check{extra})
	if seen != nil || len(r.Problems) != 0 || !reflect.DeepEqual(r.Skipped, []string{"image pullability not checked: down"}) {
		t.Errorf("without an engine: saw %v, report %+v", seen, r)
	}
}

// A hung engine cannot hang the check: each inspect has its own deadline.
func TestImageCheckHasDeadline(t *testing.T) {
	t.Parallel()
	cfg := parse(t, "mcp_servers:\n  a: {mode: docker, image: good:1}\n")
	var deadline time.Time
	eng := engineFunc(func(ctx context.Context) error {
		deadline, _ = ctx.Deadline()
		return nil
	})
	Run(context.Background(), cfg, Env{Engine: eng, Host: fakeHost{}}, Checks())
	if deadline.IsZero() || time.Until(deadline) > inspectTimeout {
		t.Errorf("inspect deadline %v, want one within %v", deadline, inspectTimeout)
	}
}

type engineFunc func(ctx context.Context) error

func (f engineFunc) ImageInspect(ctx context.Context, _ string, _ ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	return client.ImageInspectResult{}, f(ctx)
}
