package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/preflight"
)

// pingTimeout bounds how long `hangar config check` waits for the engine
// before it reports the engine checks as skipped.
const pingTimeout = 5 * time.Second

// CheckConfig loads the config at path, checks it against the engine and the
// host where it can, and writes one line per problem to w. It returns an
// error when the config is invalid or a problem was found.
func CheckConfig(ctx context.Context, path string, w io.Writer) error {
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	env, closeEnv := checkEnv(ctx, cfg)
	defer closeEnv()
	r := preflight.Run(ctx, cfg, env, preflight.Checks())
	if eng, ok := env.Engine.(egressEngine); ok {
		r.Problems = append(r.Problems, checkEgress(ctx, cfg, eng)...)
	}
	r.Problems = append(r.Problems, installRootProblems(cfg.Install, env.Host)...)
	for _, p := range r.Problems {
		fmt.Fprintln(w, p)
	}
	for _, s := range r.Skipped {
		fmt.Fprintln(w, "skipped:", s)
	}
	if n := len(r.Problems); n > 0 {
		return fmt.Errorf("%s: %d problem(s) found", path, n)
	}
	fmt.Fprintf(w, "%s: ok (%d MCP servers)\n", path, len(cfg.Servers))
	return nil
}

// checkEnv connects to the engine named by the environment (DOCKER_HOST)
// and decides whether the engine's host paths can be seen from here.
func checkEnv(ctx context.Context, cfg *config.Config) (preflight.Env, func()) {
	var env preflight.Env
	_, err := os.Stat("/.dockerenv")
	inContainer := err == nil
	local, _ := os.Hostname()

	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		env.NoEngine = fmt.Sprintf("no Docker client: %v", err)
		env.NoHost = hostVisible("", "", local, inContainer)
		return withHost(env), func() {}
	}
	ictx, cancel := context.WithTimeout(ctx, pingTimeout)
	info, err := cli.Info(ictx, client.InfoOptions{})
	cancel()
	engineName := ""
	if err != nil {
		env.NoEngine = fmt.Sprintf("cannot reach the Docker engine at %s: %v", cli.DaemonHost(), err)
	} else {
		env.Engine = cli
		env.Images = imageGate(cli, cfg)
		engineName = info.Info.Name
	}
	env.NoHost = hostVisible(cli.DaemonHost(), engineName, local, inContainer)
	return withHost(env), func() { _ = cli.Close() }
}

func withHost(env preflight.Env) preflight.Env {
	if env.NoHost == "" {
		env.Host = osHost{}
	}
	return env
}

// hostVisible returns "" when bind-mount sources, which the engine resolves
// on its own host, can be checked on this machine's filesystem, else why
// not. An engine that answered is on this machine when it reports this
// machine's hostname (a container sharing the host's socket has a hostname
// of its own); one that did not answer is trusted to be local when its
// socket is and this process is not in a container.
func hostVisible(daemonHost, engineName, localName string, inContainer bool) string {
	if daemonHost != "" && !strings.HasPrefix(daemonHost, "unix://") && !strings.HasPrefix(daemonHost, "npipe://") {
		return fmt.Sprintf("the Docker engine at %s is on another machine, whose paths are not visible here", daemonHost)
	}
	switch {
	case engineName != "" && engineName == localName:
		return ""
	case engineName != "":
		return fmt.Sprintf("the Docker engine runs on host %q and this command on %q (in a container?), so the engine's paths are not visible here", engineName, localName)
	case inContainer:
		return "this command runs in a container, where the engine host's paths are not visible"
	}
	return ""
}

type osHost struct{}

func (osHost) Stat(p string) (os.FileInfo, error)    { return os.Stat(p) }
func (osHost) EvalSymlinks(p string) (string, error) { return filepath.EvalSymlinks(p) }
