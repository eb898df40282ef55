package clientconfig

import (
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/config"
)

// FuzzMapDockerRun feeds the docker run mapper argument lists (separated by
// NUL; ROOT and ENVS stand for the allowed roots). Whatever it accepts has
// no bind source outside the allowed roots or in a refused place, no uid
// or gid 0, and no network outside the allowed list. The seed corpus is
// in testdata/fuzz/FuzzMapDockerRun, so go test replays it.
func FuzzMapDockerRun(f *testing.F) {
	h := newEscapeHost(f)
	for _, seed := range []string{
		"run\x00-v\x00/proc/1/root:/host:rw\x00--user\x0000\x00alpine",
		"run\x00-itv\x00ROOT/data:/d\x00-u\x001000\x00img",
		"run\x00--mount\x00type=bind,src=ROOT/toproc,dst=/x\x00img",
	} {
		f.Add(seed)
	}
	opts := Options{Runtimes: map[string]config.Runtime{"npx": {Image: "node:22", Network: "bridge"}}, Access: h.policy}
	f.Fuzz(func(t *testing.T, in string) {
		args := strings.Split(h.expand(in), "\x00")
		e := Entry{Command: "docker", Args: args, Env: map[string]string{"T": "x"}}
		s, _ := Map("fz", e, "f", opts)
		acceptable(t, s, h.policy)
		if s != nil && s.AllowDockerSocket {
			t.Errorf("accepted allow_docker_socket")
		}
	})
}
