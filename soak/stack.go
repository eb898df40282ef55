package soak

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Labels of what the harness itself creates (the network, PostgreSQL, the
// gateways): everything the gateways create carries the gateway's own
// io.mcp-hangar.owner label, the instance.
const (
	labelRun  = "io.mcp-hangar.soak"
	ownerKey  = "io.mcp-hangar.owner"
	replicaKV = "io.mcp-hangar.replica"
)

// stack is one run's PostgreSQL, gateway replicas, socket proxy and
// their files. Names start with soak-<run>.
type stack struct {
	o        Options
	run      string // random hex, also the gateways' instance suffix
	instance string
	dir      string // host files: config, secrets, data dirs, the socket
	net      string
	pg       string // container names
	gws      []*replica
	token    string
	pgPort   int
	pgPass   string
	proxy    *sockProxy
	discover string // the filesystem discovery source's host dir

	mu sync.Mutex // guards the replicas' URLs (a restart may change a port)
}

// urls are the replicas' current base URLs.
func (s *stack) urls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.gws))
	for i, r := range s.gws {
		out[i] = r.url
	}
	return out
}

// replica is one gateway container.
type replica struct {
	name string // container name, also its replica name
	url  string // http://127.0.0.1:<port> on the host
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// docker runs the docker CLI and returns its trimmed output.
func docker(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// startStack starts PostgreSQL, the socket proxy and the gateways, and
// waits until every replica is ready.
func startStack(ctx context.Context, o Options) (_ *stack, err error) {
	s := &stack{o: o, run: randomHex(4)}
	s.instance = "soak-" + s.run
	s.net, s.pg = s.instance, s.instance+"-pg"
	if s.dir, err = os.MkdirTemp("", "hangar-soak-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.remove(context.WithoutCancel(ctx))
		}
	}()
	s.token, s.pgPass = "soak-"+randomHex(16), randomHex(16)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	s.discover = filepath.Join(s.dir, "etc", "discovered")
	for _, d := range []string{s.discover, filepath.Join(s.dir, "sock")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := s.writeFiles(base64.StdEncoding.EncodeToString(key)); err != nil {
		return nil, err
	}
	if s.proxy, err = startSockProxy(filepath.Join(s.dir, "sock", "docker.sock"), o.DockerSocket); err != nil {
		return nil, err
	}
	if _, err := docker(ctx, "network", "create", "--label", labelRun+"="+s.run,
		"-o", "com.docker.network.bridge.name="+s.net, s.net); err != nil {
		return nil, err
	}
	if o.AcceptBridge {
		// An engine of one's own runs without iptables, under a FORWARD
		// policy another engine set to DROP: let the stack's bridge
		// forward to itself (DOCKER-USER is the chain for the user's rules).
		if out, err := exec.CommandContext(ctx, "iptables", s.bridgeRule("-I")...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("iptables: %w: %s", err, out)
		}
	}
	// Fixed host ports: a restarted container keeps its address.
	if s.pgPort, err = freePort(); err != nil {
		return nil, err
	}
	if _, err := docker(ctx, "run", "-d", "--name", s.pg, "--label", labelRun+"="+s.run, "--network", s.net,
		"-p", fmt.Sprintf("127.0.0.1:%d:5432", s.pgPort), "-e", "POSTGRES_USER=hangar", "-e", "POSTGRES_DB=hangar",
		"-e", "POSTGRES_PASSWORD_FILE=/run/soak/db_password",
		"-v", filepath.Join(s.dir, "etc", "db_password")+":/run/soak/db_password:ro",
		o.PostgresImage); err != nil {
		return nil, err
	}
	if err := waitPG(ctx, s.pgURL(), 60*time.Second); err != nil {
		return nil, err
	}
	for i := 1; i <= o.Replicas; i++ {
		r := &replica{name: fmt.Sprintf("%s-gw%d", s.instance, i)}
		s.gws = append(s.gws, r)
		if err := s.runReplica(ctx, r); err != nil {
			return nil, err
		}
	}
	for _, r := range s.gws {
		if err := s.waitReady(ctx, r, 90*time.Second); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// writeFiles writes the gateways' config, secrets and the hot-load
// catalog under s.dir/etc, mounted read-only in each gateway at
// /etc/soak; each replica's data dir gets the shared keystore key.
func (s *stack) writeFiles(key string) error {
	sum := sha256.Sum256([]byte(s.token))
	files := map[string]string{
		"db_password":  s.pgPass + "\n",
		"hangar.yaml":  gatewayConfig(s.instance, hex.EncodeToString(sum[:]), s.o),
		"catalog.json": hotloadCatalog(s.o),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(s.dir, "etc", name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	for i := 1; i <= s.o.Replicas; i++ {
		d := filepath.Join(s.dir, fmt.Sprintf("data%d", i))
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(d, "keystore.key"), []byte(key+"\n"), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// gatewayConfig is every replica's config: the shared store; servers for
// the callers (echo), for faults (crashy exits at once, hangy never
// answers); a filesystem discovery source for approvals; a catalog file
// for hot-loads; one admin token.
func gatewayConfig(instance, tokenSHA string, o Options) string {
	return fmt.Sprintf(`store:
  url: postgres://hangar@%[1]s-pg:5432/hangar?sslmode=disable
  password_file: /etc/soak/db_password
server:
  session_idle_ttl: %[4]d
  max_sessions_per_identity: 1000
mcp_servers:
  echo:
    mode: docker
    image: %[2]s
    args: ["--name", "echo"]
  crashy:
    mode: docker
    image: %[2]s
    args: ["--exit-on-start", "3"]
    start_timeout_s: 10
  hangy:
    mode: docker
    image: %[2]s
    args: ["--hang"]
    start_timeout_s: 5
    call_timeout_s: 5
discovery:
  enabled: true
  auto_register: false
  refresh_interval_s: 5
  sources:
    - {type: filesystem, path: /etc/soak/discovered, mode: additive}
registry:
  url: ""
  catalog_file: /etc/soak/catalog.json
  verified_namespaces: ["io.github.mcp-hangar/"]
  max_hot_loaded: 16
auth:
  tokens:
    - name: soak
      token_sha256: %[3]s
      scopes: [hangar:read, hangar:call, hangar:admin]
      rate_limit: {rps: 1000, burst: 2000}
logging:
  level: INFO
  json_format: true
`, instance, o.ProviderImage, tokenSHA, int(o.SessionIdleTTL.Seconds()))
}

// hotloadCatalog has one testkit entry per client kind, so that one
// kind's unload never races another's calls.
func hotloadCatalog(o Options) string {
	var entries []string
	for _, k := range clientKinds {
		entries = append(entries, fmt.Sprintf(`{"name": "io.github.mcp-hangar/%s", "description": "testkit for the soak's %s clients",
 "version": "dev", "packages": [{"registryType": "oci", "identifier": %q, "transport": {"type": "stdio"}}]}`,
			hotloadName(k), k.Label(), o.ProviderImage))
	}
	return "[" + strings.Join(entries, ",\n") + "]\n"
}

func hotloadName(k clientKind) string { return "soak-" + string(k) }

// runReplica creates and starts a gateway container. The engine is the
// socket proxy's socket, mounted as a directory so that the socket file
// stays the proxy's across the cuts.
func (s *stack) runReplica(ctx context.Context, r *replica) error {
	i := len(s.gws)
	for j, g := range s.gws {
		if g == r {
			i = j + 1
		}
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	_, err = docker(ctx, "run", "-d", "--name", r.name, "--label", labelRun+"="+s.run, "--network", s.net,
		"--user", "0:0", "-p", fmt.Sprintf("127.0.0.1:%d:8080", port),
		"-v", filepath.Join(s.dir, "etc")+":/etc/soak:ro",
		"-v", filepath.Join(s.dir, fmt.Sprintf("data%d", i))+":/data",
		"-v", filepath.Join(s.dir, "sock")+":/run/soak-docker",
		"-e", "DOCKER_HOST=unix:///run/soak-docker/docker.sock",
		s.o.GatewayImage, "serve", "--config", "/etc/soak/hangar.yaml", "--instance", s.instance,
		"--replica", r.name, "--advertise-url", "http://"+r.name+":8080")
	if err != nil {
		return err
	}
	return s.refreshURL(ctx, r)
}

// refreshURL reads the host port the replica's 8080 is published on
// (a restarted container may get another).
func (s *stack) refreshURL(ctx context.Context, r *replica) error {
	p, err := hostPort(ctx, r.name, "8080/tcp")
	if err != nil {
		return err
	}
	s.mu.Lock()
	r.url = fmt.Sprintf("http://127.0.0.1:%d", p)
	s.mu.Unlock()
	return nil
}

// stopGrace is how long a replica has to stop after SIGTERM before docker
// stop kills it.
const stopGrace = 90 * time.Second

// bridgeRule is the DOCKER-USER rule that lets the stack's bridge
// forward to itself, for iptables op (-I or -D).
func (s *stack) bridgeRule(op string) []string {
	return []string{op, "DOCKER-USER", "-i", s.net, "-o", s.net, "-j", "ACCEPT"}
}

// freePort is a port free on 127.0.0.1 now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// hostPort is the host port a container's port is published on.
func hostPort(ctx context.Context, name, port string) (int, error) {
	out, err := docker(ctx, "port", name, port)
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(out, "\n")
	_, p, err := net.SplitHostPort(strings.TrimSpace(line))
	if err != nil {
		return 0, fmt.Errorf("docker port %s %s: %q: %w", name, port, out, err)
	}
	var n int
	_, err = fmt.Sscan(p, &n)
	return n, err
}

// waitReady polls the replica's /readyz until it answers 200.
func (s *stack) waitReady(ctx context.Context, r *replica, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		s.mu.Lock()
		u := r.url
		s.mu.Unlock()
		if ready(ctx, u) {
			return nil
		}
		if time.Now().After(deadline) {
			logs, _ := docker(ctx, "logs", "--tail", "30", r.name)
			return fmt.Errorf("%s not ready within %s; its log ends:\n%s", r.name, within, logs)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func ready(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// pgURL is the store's URL from the host, with the password.
func (s *stack) pgURL() string {
	return fmt.Sprintf("postgres://hangar:%s@127.0.0.1:%d/hangar?sslmode=disable", s.pgPass, s.pgPort)
}

// stopGateways stops the replicas gracefully (SIGTERM: they drain and
// remove their containers; SIGKILL after stopGrace).
func (s *stack) stopGateways(ctx context.Context) error {
	var (
		mu   sync.Mutex
		errs []string
		wg   sync.WaitGroup
	)
	for _, r := range s.gws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := docker(ctx, "stop", "-t", strconv.Itoa(int(stopGrace/time.Second)), r.name); err != nil {
				mu.Lock()
				errs = append(errs, err.Error())
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// remove deletes everything the run made: its containers, those the
// gateways left (by the instance's owner label), the network, the files.
func (s *stack) remove(ctx context.Context) {
	for _, filter := range []string{labelRun + "=" + s.run, ownerKey + "=" + s.instance} {
		ids, _ := docker(ctx, "ps", "-aq", "--filter", "label="+filter)
		if ids != "" {
			_, _ = docker(ctx, append([]string{"rm", "-f", "-v"}, strings.Fields(ids)...)...)
		}
	}
	if s.o.AcceptBridge {
		_ = exec.CommandContext(ctx, "iptables", s.bridgeRule("-D")...).Run()
	}
	nets, _ := docker(ctx, "network", "ls", "-q", "--filter", "label="+ownerKey+"="+s.instance)
	for _, n := range append(strings.Fields(nets), s.net) {
		_, _ = docker(ctx, "network", "rm", n)
	}
	if s.proxy != nil {
		s.proxy.Close()
	}
	_ = os.RemoveAll(s.dir)
}

// gatewayContainers lists the containers the gateways created and still
// have (by the instance's owner label), as "name server replica" lines.
func (s *stack) gatewayContainers(ctx context.Context) ([]string, error) {
	out, err := docker(ctx, "ps", "-a", "--filter", "label="+ownerKey+"="+s.instance,
		"--format", `{{.Names}} {{.Label "io.mcp-hangar.server"}} {{.Label "io.mcp-hangar.replica"}} {{.State}}`)
	if err != nil || out == "" {
		return nil, err
	}
	return strings.Split(out, "\n"), nil
}
