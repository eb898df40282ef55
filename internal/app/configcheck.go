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

	"github.com/mcp-hangar/hangar/internal/clientconfig"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/packages"
	"github.com/mcp-hangar/hangar/internal/preflight"
	"github.com/mcp-hangar/hangar/internal/redact"
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
	env.Runtimes = cfg.Runtimes
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
	for _, line := range packagePlan(cfg) {
		fmt.Fprintln(w, line)
	}
	if n := len(r.Problems); n > 0 {
		return fmt.Errorf("%s: %d problem(s) found", path, n)
	}
	fmt.Fprintf(w, "%s: ok (%d MCP servers)\n", path, len(cfg.Servers))
	return nil
}

// packagePlan says which images the gateway will build: one per npm or
// PyPI server, at its first start (or at mcp/install), from its runner's
// runtime image; installed servers are the store's, not the file's.
func packagePlan(cfg *config.Config) []string {
	var out []string
	for _, t := range preflight.Targets(cfg) {
		p := t.Server.Package
		if p == nil {
			continue
		}
		rt, _ := config.RuntimeFor(cfg.Runtimes, p.Runner)
		what := p.Name + "@" + strings.TrimPrefix(p.String(), p.Type+":"+p.Name+"@")
		out = append(out, fmt.Sprintf("will build: %s: %s package %s on %s (runtimes.%s), pinned to the version it resolves to at its first start",
			t.Path, p.Type, what, rt.Image, p.Runner))
	}
	return out
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

// CheckClientConfig says what `hangar import` of a client config (Claude
// Desktop's mcpServers, VS Code's servers) would install, under the
// gateway config gw (its runtimes and install sections; nil: the
// defaults): each server's mapping, the images that will be built for its
// npm and PyPI servers and from which runtime images, and every
// diagnostic. It returns an error when a server would be refused.
func CheckClientConfig(clientFile string, gw *config.Config, w io.Writer) error {
	data, err := os.ReadFile(clientFile)
	if err != nil {
		return err
	}
	names, entries, rootKey, err := clientconfig.Parse(string(data))
	if err != nil {
		return fmt.Errorf("%s: %w", clientFile, err)
	}
	if gw == nil {
		gw = config.Default()
	}
	o := clientconfig.Options{Runtimes: gw.Runtimes, AllowSubprocess: gw.Install.AllowSubprocess, AllowedEgress: gw.Install.AllowedEgress,
		Execution: gw.Execution, Access: gw.Install.Access(gw.DataDir), Listing: true}
	refused := 0
	for _, name := range names {
		field := rootKey + "." + name
		e, diags := clientconfig.DecodeEntry(field, entries[name])
		var s *config.Server
		if !diags.HasError() {
			var d clientconfig.Diagnostics
			s, d = clientconfig.Map(name, e, field, o)
			diags = append(diags, d...)
		}
		switch {
		case s == nil:
			refused++
			fmt.Fprintf(w, "%s: refused\n", name)
		case s.Package != nil:
			rt, _ := config.RuntimeFor(gw.Runtimes, s.Package.Runner)
			fmt.Fprintf(w, "%s: will build: %s on %s (runtimes.%s), pinned at install to the version it resolves to\n",
				name, packages.Describe(*s.Package), rt.Image, s.Package.Runner)
		case s.Mode == config.ModeDocker:
			fmt.Fprintf(w, "%s: runs image %s\n", name, s.Image)
		case s.Mode == config.ModeRemote:
			fmt.Fprintf(w, "%s: connects to %s\n", name, redact.URL(s.Endpoint))
		default:
			fmt.Fprintf(w, "%s: runs %s as a process of the gateway\n", name, s.Command[0])
		}
		for _, d := range diags {
			if d.Code == clientconfig.CodePackage {
				continue // said above
			}
			fmt.Fprintf(w, "  %s %s: %s (%s)\n", d.Level, d.FieldPath, d.Message, d.Code)
		}
	}
	if refused > 0 {
		return fmt.Errorf("%s: %d of %d MCP servers would be refused", clientFile, refused, len(names))
	}
	fmt.Fprintf(w, "%s: ok (%d MCP servers)\n", clientFile, len(names))
	return nil
}

// IsClientConfig reports whether path holds a client config (JSON with
// mcpServers or servers) rather than a gateway config.
func IsClientConfig(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	_, _, _, err = clientconfig.Parse(string(data))
	return err == nil
}
