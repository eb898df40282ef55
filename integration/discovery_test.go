package integration

// Discovery against the real engine: the Docker source and the Service are
// run directly (not the whole gateway), with an in-test registry.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/discovery"
)

const (
	discImage = "mcp-hangar/testkit:dev"
	// discLabel marks every container these tests create.
	discLabel = "io.mcp-hangar.test.discovery"
	// discVisible is how soon a started container must be a candidate.
	discVisible = time.Second
)

// discClient is an engine client of its own, so these tests need nothing
// from the suite's globals.
func discClient(t *testing.T) *client.Client {
	t.Helper()
	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatalf("docker client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func discName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// discContainer creates (not starts) a testkit container; the cleanup
// force-removes it.
func discContainer(t *testing.T, cli *client.Client, name string, labels map[string]string, openStdin bool, args ...string) string {
	t.Helper()
	labels[discLabel] = "true"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: name,
		Config: &container.Config{
			Image:     discImage,
			Cmd:       args,
			Labels:    labels,
			OpenStdin: openStdin,
		},
		HostConfig: &container.HostConfig{NetworkMode: "bridge"},
	})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := cli.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			t.Errorf("remove %s: %v", name, err)
		}
	})
	return res.ID
}

func discStart(t *testing.T, cli *client.Client, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("start %.12s: %v", id, err)
	}
}

// discRegistry is an in-memory discovery.Registry.
type discRegistry struct {
	mu      sync.Mutex
	servers map[string]*config.Server
}

func (r *discRegistry) Register(spec *config.Server) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.servers[spec.ID]; ok {
		return fmt.Errorf("%s is already registered", spec.ID)
	}
	r.servers[spec.ID] = spec
	return nil
}

func (r *discRegistry) Deregister(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.servers[id]; !ok {
		return fmt.Errorf("%s is not registered", id)
	}
	delete(r.servers, id)
	return nil
}

// Refusal: nothing else claims names here.
func (r *discRegistry) Refusal(string) error { return nil }

func (r *discRegistry) Registered(id string) bool { return r.get(id) != nil }

func (r *discRegistry) Origin(id string) string {
	if s := r.get(id); s != nil {
		return s.Origin
	}
	return ""
}

func (r *discRegistry) get(id string) *config.Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.servers[id]
}

// discCheck is a Checker for http candidates: an MCP session and
// tools/list.
func discCheck(ctx context.Context, spec *config.Server) error {
	if spec.Endpoint == "" {
		return errors.New("not an http server")
	}
	tr, err := transport.NewStreamableHTTP(spec.Endpoint)
	if err != nil {
		return err
	}
	c := mcpclient.NewClient(tr)
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return err
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "hangar-discovery-test", Version: "0"}
	if _, err := c.Initialize(ctx, req); err != nil {
		return err
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return err
	}
	for _, tool := range tools.Tools {
		if tool.Name == "echo" {
			return nil
		}
	}
	return errors.New("no echo tool")
}

// discService runs a Docker source and the Service until the test ends.
func discService(t *testing.T, cli *client.Client, cfg config.Discovery, check discovery.Checker) (*discovery.Service, *discRegistry) {
	t.Helper()
	cfg.Enabled = true
	cfg.RefreshInterval = time.Hour // only events may make a container visible
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Scoped to this suite's discovery containers: others, of other
	// projects and runs, may be labelled for discovery on the same engine.
	src := discovery.NewDocker(cli, config.Source{Type: "docker", Mode: discovery.ModeAuthoritative,
		Filters: config.SourceFilters{Labels: map[string]string{discLabel: "true"}}}, nil, log)
	reg := &discRegistry{servers: map[string]*config.Server{}}
	svc := discovery.New(cfg, reg, check, nil, log, src)
	ctx, cancel := context.WithCancel(context.Background())
	svc.Start(ctx)
	t.Cleanup(func() { cancel(); svc.Close() })
	discWait(t, 10*time.Second, "the first scan", func() bool { return !svc.Sources()[0].LastDiscovery.IsZero() })
	return svc, reg
}

func discWait(t *testing.T, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	began := time.Now()
	for !cond() {
		if time.Since(began) > within {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(began)
}

func discPending(svc *discovery.Service, name string) *discovery.PendingEntry {
	for _, p := range svc.Pending() {
		if p.Name == name {
			return &p
		}
	}
	return nil
}

func TestDiscoveryDockerPendingApproveRemove(t *testing.T) {
	cli := discClient(t)
	svc, reg := discService(t, cli, config.Default().Discovery, nil)

	good, bad := discName("disc-good"), discName("disc-bad")
	badID := discContainer(t, cli, bad, map[string]string{
		discovery.LabelEnabled: "true", discovery.LabelName: bad, discovery.LabelPort: "abc",
	}, false, "--transport", "http", "--port", "8080")
	goodID := discContainer(t, cli, good, map[string]string{
		discovery.LabelEnabled: "true", discovery.LabelName: good,
	}, false, "--transport", "http", "--port", "8080", "--path", "/mcp")

	discStart(t, cli, badID)
	discStart(t, cli, goodID)
	took := discWait(t, discVisible, "labelled container pending", func() bool { return discPending(svc, good) != nil })
	t.Logf("pending %s after start", took)

	p := discPending(svc, good)
	if p.Source != "docker" || p.Mode != "remote" || p.Fingerprint == "" || p.DiscoveredAt.IsZero() {
		t.Errorf("pending entry %+v", p)
	}
	if discPending(svc, bad) != nil {
		t.Error("a container with a bad label is pending")
	}
	// The bad container is reported, and did not stop the good one.
	discWait(t, 5*time.Second, "bad label reported", func() bool {
		msg := svc.Sources()[0].ErrorMessage
		return strings.Contains(msg, "container "+bad) && strings.Contains(msg, `label mcp.hangar.port: must be 1..65535 (got "abc")`)
	})
	if st := svc.Sources()[0]; !st.IsHealthy || st.SourceType != "docker" || st.ServersCount < 1 {
		t.Errorf("source status %+v", st)
	}

	if r := svc.Approve(t.Context(), good); !r.Approved || r.Status != "registered" {
		t.Fatalf("approve: %+v", r)
	}
	spec := reg.get(good)
	if spec == nil || spec.Origin != "docker" || spec.Mode != config.ModeRemote || !strings.HasSuffix(spec.Endpoint, ":8080/mcp") {
		t.Fatalf("registered spec %+v", spec)
	}
	// The endpoint the labels describe answers MCP (once the server in the
	// just-started container listens).
	for deadline := time.Now().Add(20 * time.Second); ; {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		err := discCheck(ctx, spec)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("registered endpoint %s: %v", spec.Endpoint, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Stopping it deregisters it: the source is authoritative.
	sctx, scancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer scancel()
	timeout := 1
	if _, err := cli.ContainerStop(sctx, goodID, client.ContainerStopOptions{Timeout: &timeout}); err != nil {
		t.Fatalf("stop: %v", err)
	}
	discWait(t, 5*time.Second, "deregistered after stop", func() bool { return !reg.Registered(good) })
	if discPending(svc, good) != nil {
		t.Error("stopped container still pending")
	}
}

func TestDiscoveryDockerStdioAttach(t *testing.T) {
	cli := discClient(t)
	svc, reg := discService(t, cli, config.Default().Discovery, nil)

	name, closed := discName("disc-stdio"), discName("disc-nostdin")
	id := discContainer(t, cli, name, map[string]string{
		discovery.LabelEnabled: "true", discovery.LabelMode: "stdio",
	}, true, "--transport", "stdio")
	closedID := discContainer(t, cli, closed, map[string]string{
		discovery.LabelEnabled: "true", discovery.LabelMode: "stdio",
	}, false, "--transport", "stdio")
	discStart(t, cli, closedID)
	discStart(t, cli, id)

	discWait(t, discVisible, "stdio container pending", func() bool { return discPending(svc, name) != nil })
	if p := discPending(svc, name); p.Mode != "docker" {
		t.Errorf("pending entry %+v", p)
	}
	if r := svc.Approve(t.Context(), name); !r.Approved {
		t.Fatalf("approve: %+v", r)
	}
	if spec := reg.get(name); spec == nil || spec.AttachContainer != id || spec.Transport != config.TransportStdio {
		t.Errorf("registered spec %+v", spec)
	}
	// A stdio container without an open stdin cannot be attached to. (It
	// may exit at once on EOF; then it is simply not listed.)
	if discPending(svc, closed) != nil {
		t.Error("container without open stdin is pending")
	}
}

func TestDiscoveryDockerHealthCheckQuarantine(t *testing.T) {
	cli := discClient(t)
	cfg := config.Default().Discovery
	cfg.AutoRegister = true
	cfg.Security.RequireHealthCheck = true
	svc, reg := discService(t, cli, cfg, discCheck)

	ok, broken := discName("disc-ok"), discName("disc-broken")
	okID := discContainer(t, cli, ok, map[string]string{discovery.LabelEnabled: "true"},
		false, "--transport", "http", "--port", "8080")
	// The labels point at a port nothing listens on.
	brokenID := discContainer(t, cli, broken, map[string]string{discovery.LabelEnabled: "true", discovery.LabelPort: "9"},
		false, "--transport", "http", "--port", "8080")
	discStart(t, cli, okID)
	discStart(t, cli, brokenID)

	discWait(t, 30*time.Second, "healthy container registered", func() bool { return reg.Registered(ok) })
	discWait(t, 30*time.Second, "broken container quarantined", func() bool {
		return slices.ContainsFunc(svc.Quarantined(), func(q discovery.QuarantineEntry) bool { return q.Name == broken })
	})
	for _, q := range svc.Quarantined() {
		if q.Name == broken && !strings.HasPrefix(q.Reason, "health_check_failed: ") {
			t.Errorf("reason %q", q.Reason)
		}
	}
	if reg.Registered(broken) {
		t.Error("broken container registered")
	}
	if r := svc.Approve(t.Context(), broken); !r.Approved || !reg.Registered(broken) {
		t.Errorf("approve from quarantine: %+v", r)
	}
}
