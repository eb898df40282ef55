package integration

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcp-hangar/hangar/internal/forward"
	"github.com/mcp-hangar/hangar/internal/manage"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// swarmPostgresImage is the stack's database; `make images` builds it from
// the host's PostgreSQL packages.
const swarmPostgresImage = "mcp-hangar/postgres:dev"

// needSwarm makes the engine a single-node swarm for the test, and leaves
// the swarm at the end only if the test created it. An engine that cannot
// be a swarm skips the test, except under CI=true.
func needSwarm(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	cannot := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (CI=true, so this is a failure)", msg)
		}
		t.Skip(msg)
	}
	info, err := docker.Info(ctx, client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	switch state := info.Info.Swarm.LocalNodeState; {
	case state == swarm.LocalNodeStateActive && info.Info.Swarm.ControlAvailable:
		return
	case state == swarm.LocalNodeStateActive:
		cannot("the engine is a swarm worker: services are listed on managers only")
	case state != swarm.LocalNodeStateInactive:
		cannot("the engine's swarm state is %q", state)
	}
	out, err := exec.CommandContext(ctx, "docker", "swarm", "init", "--advertise-addr", "127.0.0.1").CombinedOutput()
	if err != nil {
		cannot("the engine cannot become a swarm: docker swarm init: %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("docker", "swarm", "leave", "--force").CombinedOutput(); err != nil {
			t.Errorf("docker swarm leave --force: %v: %s", err, out)
		}
	})
}

// TestSwarmStack deploys compose/swarm.yml as a stack of its own on a
// single-node swarm: two gateway replicas on one PostgreSQL store and the
// echo provider service, which both replicas discover and call by its
// service name. Then one gateway task is killed: 2026-07-28 clients keep
// calling through a round-robin balancer, 2025-11-25 clients whose
// sessions were on the killed replica initialize again, and Swarm's
// replacement task serves the discovered provider too. A service labelled
// afterwards is found on its create event and dropped on its remove event,
// within 5 s.
//
// A server installed through one replica is served by the other, and
// 2025-11-25 sessions of both clients work through the balancer: their
// requests that land on the other replica are forwarded to the one
// holding the session, at the URL each task advertises (its name).
func TestSwarmStack(t *testing.T) {
	if _, err := docker.ImageInspect(t.Context(), swarmPostgresImage); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s: %v (make images builds it; CI=true, so this is a failure)", swarmPostgresImage, err)
		}
		t.Skipf("%s: %v (make images builds it where PostgreSQL is installed)", swarmPostgresImage, err)
	}
	needSwarm(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	// Everything the stack creates is named <stack>_… and labelled
	// com.docker.stack.namespace=<stack>.
	stack := strings.TrimSuffix(suitePrefix, "-") + "-swarm-" + randomHex(3)
	secrets := t.TempDir()
	token := "swarm-" + randomHex(16)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	for name, v := range map[string]string{"token": token, "db_password": randomHex(12),
		"keystore_key": base64.StdEncoding.EncodeToString(key)} {
		if err := os.WriteFile(filepath.Join(secrets, name), []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	meshPort := freePort(t)
	env := append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "HANGAR_") }),
		"HANGAR_PORT="+strconv.Itoa(meshPort), "HANGAR_SECRETS_DIR="+secrets, "HANGAR_INSTANCE="+stack,
		"HANGAR_GATEWAY_IMAGE="+gatewayImage())
	deploy := exec.CommandContext(ctx, "docker", "stack", "deploy",
		"-c", filepath.Join(repoRoot, "compose", "swarm.yml"),
		"-c", filepath.Join(repoRoot, "integration", "testdata", "TestSwarmStack", "direct.yml"), stack)
	deploy.Env = env
	t.Cleanup(func() { removeStack(t, stack) })
	began := time.Now()
	if out, err := deploy.CombinedOutput(); err != nil {
		t.Fatalf("docker stack deploy: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := exec.Command("docker", "service", "logs", "--no-trunc", "--tail", "30", stack+"_hangar").CombinedOutput()
			t.Logf("gateway logs:\n%s", out)
		}
	})

	// Both replicas up, each on its own host port besides the mesh's.
	replicas := waitGatewayTasks(t, ctx, stack, 2, nil)
	t.Logf("stack up, 2 replicas healthy in %s", time.Since(began).Round(time.Millisecond))
	// The routing mesh needs IPVS, which these VMs' kernels lack: a plain
	// round-robin balancer over the running, healthy tasks (what the mesh
	// routes to) stands in for it.
	tb := &taskBalancer{stack: stack}
	lb := httptest.NewServer(tb)
	t.Cleanup(lb.Close)
	balanced := lb.URL + "/mcp"

	// The echo service is discovered by each replica and called through it
	// by its service name, with both clients.
	for _, r := range replicas {
		s := connectBearer(t, r.url, token)
		waitEcho(t, ctx, s, "through replica "+r.id[:12])
		sd := dialSDKBearer(t, r.url, token, mcp.LATEST_PROTOCOL_VERSION)
		if got := sdkEcho(ctx, sd, "go-sdk via "+r.id[:12]); got != nil {
			t.Errorf("go-sdk through replica %.12s: %v", r.id, got)
		}
	}
	t.Logf("echo discovered and called through both replicas %s after deploy", time.Since(began).Round(time.Millisecond))

	// A server installed through one replica is served by the other: the
	// install is a store write whose notice the other replica applies.
	installed := "installed"
	cfg := `{"mcpServers": {"` + installed + `": {"url": "http://` + stack + `_echo:8080/mcp"}}}`
	installedAt := time.Now()
	if res, _, raw := mgmtAs(t, replicas[0].url, token, manage.MethodInstall, map[string]any{"config_json": cfg}); res["status"] != "ok" {
		t.Fatalf("mcp/install through replica %.12s: %s", replicas[0].id, raw)
	}
	other := connectBearer(t, replicas[1].url, token)
	waitFor(t, 10*time.Second, "the install served by the other replica", func() bool {
		return slices.Contains(listed(t, other), installed)
	})
	t.Logf("installed through replica %.12s, listed by replica %.12s %s later", replicas[0].id, replicas[1].id, time.Since(installedAt).Round(time.Millisecond))
	waitFor(t, 20*time.Second, "the installed server called through the other replica", func() bool {
		res, err := callServer(ctx, other, installed, "via the other replica")
		return err == nil && res["result"] == "via the other replica"
	})

	// 2025-11-25 sessions through the balancer, with both clients: each
	// lives on the replica that answered its initialize, and its requests
	// that land on the other one are forwarded to it, at the URL it
	// advertises (its task's name on the mcp network).
	legacyLB := connectBearer(t, balanced, token, mcpclient.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	legacySDKLB := dialSDKBearer(t, balanced, token, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	// One client at a time, so that each one's requests alternate
	// between the tasks.
	for _, c := range []struct {
		name string
		call func(text string) error
	}{
		{"mcp-go", func(text string) error { return echoErr(ctx, legacyLB, text) }},
		{"go-sdk", func(text string) error { return sdkEcho(ctx, legacySDKLB, text) }},
	} {
		strays := tb.strays.Load()
		for i := range 6 {
			if err := c.call(fmt.Sprintf("2025-11-25 %s through the balancer %d", c.name, i)); err != nil {
				t.Errorf("a 2025-11-25 %s session through the balancer, call %d: %v", c.name, i, err)
			}
		}
		if n := tb.strays.Load() - strays; n < 3 {
			t.Errorf("%d requests of the 2025-11-25 %s session landed on the replica that does not hold it: forwarding not exercised", n, c.name)
		} else {
			t.Logf("a 2025-11-25 %s session through the balancer: 6 calls answered, %d requests forwarded to the replica holding it", c.name, n)
		}
	}
	_ = legacySDKLB.Close()

	// 2025-11-25 sessions on the replica about to be killed, with both
	// clients.
	victim := replicas[0]
	legacyGo := connectBearer(t, victim.url, token, mcpclient.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	legacySDK := dialSDKBearer(t, victim.url, token, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	echoOK(t, ctx, legacyGo, "legacy before the kill")
	if err := sdkEcho(ctx, legacySDK, "legacy go-sdk before the kill"); err != nil {
		t.Fatal(err)
	}

	// A 2026-07-28 client of each kind calls through the balancer all along.
	type outcome struct {
		at  time.Time
		err error
	}
	var (
		mu       sync.Mutex
		outcomes []outcome
	)
	loopCtx, stopLoop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	modernGo := connectBearer(t, balanced, token)
	modernSDK := dialSDKBearer(t, balanced, token, mcp.LATEST_PROTOCOL_VERSION)
	for i, call := range []func() error{
		func() error { return echoErr(loopCtx, modernGo, "modern mcp-go") },
		func() error { return sdkEcho(loopCtx, modernSDK, "modern go-sdk") },
	} {
		wg.Go(func() {
			for loopCtx.Err() == nil {
				err := call()
				if loopCtx.Err() != nil {
					return
				}
				mu.Lock()
				outcomes = append(outcomes, outcome{time.Now(), err})
				mu.Unlock()
				if err != nil {
					t.Logf("modern client %d: %v", i, err)
				}
				// Far below the token's rate limit (50/s shared by the
				// replicas), also when one replica takes all.
				time.Sleep(250 * time.Millisecond)
			}
		})
	}
	counted := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(outcomes)
	}
	waitFor(t, 10*time.Second, "modern calls through the balancer", func() bool { return counted() >= 6 })

	killed := time.Now()
	if _, err := docker.ContainerKill(ctx, victim.id, client.ContainerKillOptions{Signal: "SIGKILL"}); err != nil {
		t.Fatal(err)
	}
	// The killed replica's sessions are gone with it: the 2025-11-25
	// clients notice on their next request and initialize again, on the
	// live replica (a 2025-11-25 session is held by one replica, whichever
	// replica its requests land on).
	if _, _, _, err := legacyGo.callE(ctx, "hangar_call", one("echo", "echo", map[string]any{"text": "x"})); err == nil {
		t.Error("a call on the killed replica's session succeeded")
	}
	legacyGo = connectBearer(t, replicas[1].url, token, mcpclient.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	if v := legacyGo.init.ProtocolVersion; v != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Errorf("re-initialized mcp-go session speaks %q", v)
	}
	echoOK(t, ctx, legacyGo, "legacy mcp-go after re-initializing")
	if err := sdkEcho(ctx, legacySDK, "legacy go-sdk on the killed replica"); err == nil {
		t.Error("a go-sdk call on the killed replica's session succeeded")
	}
	legacySDK = dialSDKBearer(t, replicas[1].url, token, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	if err := sdkEcho(ctx, legacySDK, "legacy go-sdk after re-initializing"); err != nil {
		t.Error(err)
	}

	// Swarm replaces the task; the replacement discovers echo and serves it.
	fresh := waitGatewayTasks(t, ctx, stack, 2, []string{victim.id})
	replaced := time.Since(killed)
	for _, r := range fresh {
		if r.id == replicas[1].id {
			continue
		}
		s := connectBearer(t, r.url, token)
		waitEcho(t, ctx, s, "through the replacement "+r.id[:12])
	}
	after := counted()
	waitFor(t, 10*time.Second, "modern calls after the replacement", func() bool { return counted() >= after+6 })
	stopLoop()
	wg.Wait()

	// A service labelled later is found on its create event (the stack's
	// config rescans only every 30 s) by every replica, and deregistered
	// on its remove event. It carries the stack's label, so that removing
	// the stack removes it too.
	late := stack + "_late"
	create := exec.CommandContext(ctx, "docker", "service", "create", "--detach", "--quiet", "--name", late,
		"--label", "com.docker.stack.namespace="+stack, "--label", "mcp.hangar.enabled=true", "--label", "mcp.hangar.name=late",
		"--network", stack+"_mcp", "--endpoint-mode", "dnsrr", "--replicas", "1",
		"mcp-hangar/testkit:dev", "--transport", "http", "--port", "8080", "--name", "late")
	created := time.Now()
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("docker service create: %v\n%s", err, out)
	}
	for _, r := range fresh {
		s := connectBearer(t, r.url, token)
		waitFor(t, 10*time.Second, "late discovered through "+r.id[:12], func() bool {
			res, err := callServer(ctx, s, "late", "hello late")
			return err == nil && res["result"] == "hello late"
		})
	}
	t.Logf("a new labelled service callable through both replicas %s after its create", time.Since(created).Round(time.Millisecond))
	if out, err := exec.CommandContext(ctx, "docker", "service", "rm", late).CombinedOutput(); err != nil {
		t.Fatalf("docker service rm: %v\n%s", err, out)
	}
	removed := time.Now()
	for _, r := range fresh {
		s := connectBearer(t, r.url, token)
		waitFor(t, removedWithin-time.Since(removed), "late deregistered by "+r.id[:12], func() bool {
			return !slices.Contains(listed(t, s), "late")
		})
		if got := listed(t, s); !slices.Contains(got, "echo") {
			t.Errorf("hangar_list of %.12s after late's removal: %v, want echo still", r.id, got)
		}
	}
	t.Logf("the removed service deregistered by both replicas %s after its remove", time.Since(removed).Round(time.Millisecond))

	// The 2026-07-28 clients never failed but in the moment of the kill:
	// requests sent to the killed task before its container was seen
	// exited, none after.
	ok, failed, lastFailure := 0, 0, time.Duration(0)
	for _, o := range outcomes {
		since := o.at.Sub(killed)
		switch {
		case o.err == nil:
			ok++
		case since < 0 || since > killFailureWindow || !strings.Contains(o.err.Error(), "Bad Gateway") && !strings.Contains(o.err.Error(), "502"):
			t.Errorf("modern call failed %s after the kill: %v", since.Round(time.Millisecond), o.err)
		default:
			failed++
			lastFailure = since
		}
	}
	t.Logf("kill: task replaced and healthy after %s; modern calls: %d ok, %d sent to the killed task (the last %s after the kill)",
		replaced.Round(time.Millisecond), ok, failed, lastFailure.Round(time.Millisecond))
	t.Logf("whole stack test %s", time.Since(began).Round(time.Millisecond))
}

// killFailureWindow is how long after a gateway task is killed a request
// may still be sent to it (and answered 502 by the balancer): a balancer
// drops the task once it is seen exited.
const killFailureWindow = 3 * time.Second

// gatewayTask is one running, healthy gateway replica.
type gatewayTask struct {
	id  string // container ID
	url string // its /mcp on its own host port
}

// healthyGatewayTasks lists the gateway containers of stack that are
// running and healthy, by container ID.
func healthyGatewayTasks(ctx context.Context, stack string) ([]gatewayTask, error) {
	list, err := docker.ContainerList(ctx, client.ContainerListOptions{Filters: make(client.Filters).
		Add("label", "com.docker.swarm.service.name="+stack+"_hangar")})
	if err != nil {
		return nil, err
	}
	var out []gatewayTask
	for _, c := range list.Items {
		if c.State != container.StateRunning || !strings.Contains(c.Status, "(healthy)") {
			continue
		}
		for _, p := range c.Ports {
			if p.PrivatePort == 8080 && p.PublicPort != 0 {
				out = append(out, gatewayTask{id: c.ID, url: fmt.Sprintf("http://127.0.0.1:%d/mcp", p.PublicPort)})
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b gatewayTask) int { return strings.Compare(a.id, b.id) })
	return out, nil
}

// waitGatewayTasks waits until n gateway containers of stack, none of them
// in not, are running and healthy, and returns them.
func waitGatewayTasks(t *testing.T, ctx context.Context, stack string, n int, not []string) []gatewayTask {
	t.Helper()
	var out []gatewayTask
	waitFor(t, 90*time.Second, fmt.Sprintf("%d healthy gateway tasks", n), func() bool {
		all, err := healthyGatewayTasks(ctx, stack)
		if err != nil {
			t.Fatal(err)
		}
		out = slices.DeleteFunc(all, func(g gatewayTask) bool { return slices.Contains(not, g.id) })
		return len(out) == n
	})
	return out
}

// taskBalancer sends each request to the next running, healthy gateway
// task of stack, on a connection of its own.
type taskBalancer struct {
	stack string
	next  atomic.Uint64
	// strays counts the requests of a 2025-11-25 session sent to a task
	// other than the one holding it (a replica is named by its host name,
	// its container's short ID).
	strays atomic.Int64
}

var balancerTransport = &http.Transport{DisableKeepAlives: true}

func (b *taskBalancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tasks, err := healthyGatewayTasks(r.Context(), b.stack)
	if err != nil || len(tasks) == 0 {
		http.Error(w, fmt.Sprintf("no healthy gateway task (%v)", err), http.StatusServiceUnavailable)
		return
	}
	task := tasks[b.next.Add(1)%uint64(len(tasks))]
	if owner := forward.Owner(r.Header.Get("Mcp-Session-Id")); owner != "" && !strings.HasPrefix(task.id, owner) {
		b.strays.Add(1)
	}
	target, err := url.Parse(task.url)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	target.Path = ""
	proxy := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: balancerTransport,
	}
	proxy.ServeHTTP(w, r)
}

// removeStack removes the stack, then its volume once no container uses it.
func removeStack(t *testing.T, stack string) {
	t.Helper()
	if out, err := exec.Command("docker", "stack", "rm", stack).CombinedOutput(); err != nil {
		t.Errorf("docker stack rm: %v\n%s", err, out)
		return
	}
	label := "com.docker.stack.namespace=" + stack
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		cs, err := docker.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", label)})
		ns, nerr := docker.NetworkList(ctx, client.NetworkListOptions{Filters: make(client.Filters).Add("label", label)})
		if err == nil && nerr == nil && len(cs.Items) == 0 && len(ns.Items) == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Errorf("the stack's containers or networks outlived docker stack rm (%v %v)", err, nerr)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	vs, err := docker.VolumeList(ctx, client.VolumeListOptions{Filters: make(client.Filters).Add("label", label)})
	if err != nil {
		t.Error(err)
		return
	}
	for _, v := range vs.Items {
		if _, err := docker.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{}); err != nil {
			t.Errorf("remove the stack's volume %s: %v", v.Name, err)
		}
	}
}

func connectBearer(t *testing.T, url, token string, opts ...mcpclient.ClientOption) *session {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	return startSession(t, mcpclient.NewClient(tr, opts...))
}

func dialSDKBearer(t *testing.T, url, token, version string) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "swarm", Version: "1"}, nil)
	s, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearer{token}}}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("go-sdk connect on %s to %s: %v", version, url, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if got := s.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("the go-sdk session speaks %q, want %q", got, version)
	}
	return s
}

// callServer calls the echo tool of server through hangar_call and
// returns its result.
func callServer(ctx context.Context, s *session, server, text string) (map[string]any, error) {
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	m, isErr, raw, err := s.callE(cctx, "hangar_call", one(server, "echo", map[string]any{"text": text}))
	if err != nil {
		return nil, err
	}
	if isErr {
		return nil, fmt.Errorf("hangar_call error: %s", raw)
	}
	r, err := firstResult(m)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, raw)
	}
	return r, nil
}

// listed is the server IDs hangar_list shows.
func listed(t *testing.T, s *session) []string {
	t.Helper()
	m := s.mustCall(t, "hangar_list", nil)
	var ids []string
	servers, _ := m["mcp_servers"].([]any)
	for _, v := range servers {
		if srv, ok := v.(map[string]any); ok {
			ids = append(ids, str(srv, "mcp_server"))
		}
	}
	return ids
}

// echoErr calls the discovered echo server through hangar_call.
func echoErr(ctx context.Context, s *session, text string) error {
	r, err := callServer(ctx, s, "echo", text)
	switch {
	case err != nil:
		return err
	case r["result"] != text:
		return fmt.Errorf("echo answered %v (%v), want %q", r["result"], r["error"], text)
	}
	return nil
}

func echoOK(t *testing.T, ctx context.Context, s *session, text string) {
	t.Helper()
	if err := echoErr(ctx, s, text); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
}

// waitEcho waits until echo is discovered: the first scan and health check
// of a replica that just started may still be running.
func waitEcho(t *testing.T, ctx context.Context, s *session, text string) {
	t.Helper()
	var last error
	deadline := time.Now().Add(60 * time.Second)
	for {
		if last = echoErr(ctx, s, text); last == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("echo not callable %s within 60s: %v", text, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func sdkEcho(ctx context.Context, s *sdk.ClientSession, text string) error {
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res, err := s.CallTool(cctx, &sdk.CallToolParams{Name: "hangar_call", Arguments: one("echo", "echo", map[string]any{"text": text})})
	if err != nil {
		return err
	}
	if res.IsError || len(res.Content) == 0 {
		return fmt.Errorf("hangar_call error: %+v", res.Content)
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		return fmt.Errorf("hangar_call answered %T", res.Content[0])
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(tc.Text), &m); err != nil {
		return fmt.Errorf("hangar_call answer: %w: %s", err, tc.Text)
	}
	r, err := firstResult(m)
	if err != nil {
		return err
	}
	if r["result"] != text {
		return fmt.Errorf("echo answered %v, want %q", r["result"], text)
	}
	return nil
}
