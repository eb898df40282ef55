package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/app"
)

// recWorkerTick is the worker tick of the gateways of the recovery and
// reload tests: short, so health checks and idle collection happen within
// a fraction of a second of being due.
const recWorkerTick = 100 * time.Millisecond

// ---------------------------------------------------------------------------
// Helpers of the recovery and reload tests

// recConfigFile writes yaml to config.yaml in a new temporary directory of
// the test and returns its path; recRewrite replaces it later.
func recConfigFile(t testing.TB, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	recRewrite(t, path, yaml)
	return path
}

// recRewrite replaces the file at path with yaml atomically (write to a
// temporary file, rename), so a watcher never reads half a file.
func recRewrite(t testing.TB, path, yaml string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// recGateway runs an in-process gateway whose config is read from the file
// at path (so that hangar_reload_config and the file watcher can re-read
// it), with the short worker tick. The cleanup is that of startGatewayAs.
func recGateway(t testing.TB, path string) *gw {
	t.Helper()
	return startGatewayFile(t, path, app.Options{WorkerTick: recWorkerTick})
}

// recGatewayYAML is recGateway for a config that is never rewritten.
func recGatewayYAML(t testing.TB, yaml string) *gw {
	t.Helper()
	return recGateway(t, recConfigFile(t, yaml))
}

// recOutcome is the outcome of a hangar_call run in the background.
type recOutcome struct {
	res     map[string]any // the single result
	err     error
	elapsed time.Duration
	at      time.Time // when the answer arrived
}

// recCallAsync runs one tool through hangar_call in a goroutine; the
// channel gets its outcome. timeoutS is the call's timeout in seconds.
func recCallAsync(s *session, server, tool string, args map[string]any, timeoutS int) <-chan recOutcome {
	out := make(chan recOutcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		c := map[string]any{"mcp_server": server, "tool": tool, "arguments": args, "timeout": timeoutS}
		began := time.Now()
		m, isErr, raw, err := s.callE(ctx, "hangar_call", map[string]any{"calls": []any{c}})
		o := recOutcome{elapsed: time.Since(began), at: time.Now(), err: err}
		if err == nil && (isErr || m == nil) {
			o.err = fmt.Errorf("hangar_call failed: %s", raw)
		}
		if o.err == nil {
			o.res, o.err = firstResult(m)
		}
		out <- o
	}()
	return out
}

// recAwait waits for a background call's outcome.
func recAwait(t testing.TB, ch <-chan recOutcome, within time.Duration, what string) recOutcome {
	t.Helper()
	select {
	case o := <-ch:
		if o.err != nil {
			t.Fatalf("%s: %v", what, o.err)
		}
		return o
	case <-time.After(within):
		t.Fatalf("%s: no answer within %s", what, within)
	}
	return recOutcome{}
}

// recDetails returns hangar_details of id.
func recDetails(t testing.TB, s *session, id string) (top, health, meta map[string]any) {
	t.Helper()
	d := s.mustCall(t, "hangar_details", map[string]any{"mcp_server": id})
	health, _ = d["health"].(map[string]any)
	meta, _ = d["meta"].(map[string]any)
	return d, health, meta
}

// recWaitState polls hangar_list until id is in state want, and returns how
// long that took.
func recWaitState(t testing.TB, s *session, id, want string, within time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	last := ""
	for {
		last = s.providerState(t, id)
		if last == want {
			return time.Since(began)
		}
		if time.Since(began) > within {
			t.Fatalf("%s: state %q after %s, want %q", id, last, within, want)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// recWaitContainers polls the engine until owner/server has n containers
// and returns how long that took.
func recWaitContainers(t testing.TB, owner, server string, n int, within time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	for {
		list := containers(t, owner, server)
		if len(list) == n {
			return time.Since(began)
		}
		if time.Since(began) > within {
			t.Fatalf("%s/%s: %d container(s) after %s, want %d: %s", owner, server, len(list), within, n, describe(list))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// recScrape returns the gateway's /metrics text.
func recScrape(t testing.TB, g *gw) string {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get(g.URL + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: status %d: %s", resp.StatusCode, b)
	}
	return string(b)
}

// recMetric finds the sample of name whose only label is mcp_server=server
// in Prometheus text.
func recMetric(text, name, server string) (float64, bool) {
	prefix := name + `{mcp_server="` + server + `"} `
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, prefix); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}

// recCheckMetric asserts a per-server counter in both /metrics and
// hangar_metrics format prometheus. The provider records an exit just after
// it fails the calls in flight, so /metrics gets a moment to catch up.
func recCheckMetric(t testing.TB, g *gw, s *session, name, server string, want float64) {
	t.Helper()
	began := time.Now()
	for looks := 1; ; looks++ {
		v, ok := recMetric(recScrape(t, g), name, server)
		if ok && v == want {
			if looks > 1 {
				t.Logf("/metrics showed %s{mcp_server=%q} %v only at look %d, %s after the first", name, server, want, looks, time.Since(began))
			}
			break
		}
		if time.Since(began) > 2*time.Second {
			t.Errorf("/metrics %s{mcp_server=%q} = %v (present %v), want %v", name, server, v, ok, want)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	m := s.mustCall(t, "hangar_metrics", map[string]any{"format": "prometheus"})
	if v, ok := recMetric(str(m, "metrics"), name, server); !ok || v != want {
		t.Errorf("hangar_metrics(prometheus) %s{mcp_server=%q} = %v (present %v), want %v", name, server, v, ok, want)
	}
}

func recDockerCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), dockerTimeout)
}

// recOnlyContainer returns the one container of owner/server.
func recOnlyContainer(t testing.TB, owner, server string) string {
	t.Helper()
	list := containers(t, owner, server)
	if len(list) != 1 {
		t.Fatalf("%d containers labelled owner=%s server=%s, want 1: %s", len(list), owner, server, describe(list))
	}
	return list[0].ID
}

const testkitYAML = `
mcp_servers:
  testkit:
    mode: docker
    image: mcp-hangar/testkit:dev
    start_timeout_s: 30
`

// ---------------------------------------------------------------------------
// Tests

// A container killed from outside under a call fails the call at once with
// the exit, takes the provider out of READY, and the next call gets a new
// container.
func TestKillContainerMidCall(t *testing.T) {
	g := recGatewayYAML(t, testkitYAML)
	s := connect(t, g.MCPURL)
	s.mustCall(t, "hangar_start", map[string]any{"mcp_server": "testkit"})
	first := containerOf(t, s, "testkit")
	byLabel := recOnlyContainer(t, g.Instance, "testkit")
	if first != byLabel {
		t.Fatalf("hangar_details container_id %q, but the labelled container is %q", first, byLabel)
	}

	ch := recCallAsync(s, "testkit", "sleep", map[string]any{"ms": 5000}, 10)
	waitInflight(t, s, "testkit", 1, 5*time.Second)

	ctx, cancel := recDockerCtx()
	_, err := docker.ContainerKill(ctx, byLabel, client.ContainerKillOptions{Signal: "SIGKILL"})
	cancel()
	if err != nil {
		t.Fatalf("kill container: %v", err)
	}
	killed := time.Now()

	o := recAwait(t, ch, 20*time.Second, "sleeping call")
	sinceKill := o.at.Sub(killed)
	t.Logf("sleeping call returned %s after the kill (%s in all): %v", sinceKill, o.elapsed, o.res)
	if o.res["success"] != false || str(o.res, "error_type") != "provider_crashed" {
		t.Errorf("sleeping call = %v, want success false with error_type provider_crashed", o.res)
	}
	if e := str(o.res, "error"); !strings.Contains(e, "exit 137") || !strings.HasPrefix(e, "provider_crashed: testkit") {
		t.Errorf("sleeping call error = %q, want provider_crashed: testkit (exit 137 ...)", e)
	}
	if strings.Contains(str(o.res, "error"), "oom") {
		t.Errorf("sleeping call error = %q: a SIGKILL from outside is not an OOM kill", str(o.res, "error"))
	}
	if sinceKill > 1500*time.Millisecond {
		t.Errorf("the call returned %s after the kill, want within ~1s", sinceKill)
	}

	if st := s.providerState(t, "testkit"); st == "ready" {
		t.Errorf("state right after the crash = %q, want it out of ready", st)
	} else {
		t.Logf("state right after the crash: %s", st)
	}

	r := s.callOne(t, "testkit", "echo", map[string]any{"text": "after the kill"})
	if r["success"] != true || r["result"] != "after the kill" {
		t.Errorf("echo after the kill = %v, want success", r)
	}
	second := containerOf(t, s, "testkit")
	if second == "" || second == first {
		t.Errorf("container after the kill = %q, want a new one (the killed one was %q)", second, first)
	}
	if id := recOnlyContainer(t, g.Instance, "testkit"); id != second {
		t.Errorf("labelled container %q, hangar_details says %q", id, second)
	}
	recCheckMetric(t, g, s, "hangar_backend_exits_total", "testkit", 1)
	if v, ok := recMetric(recScrape(t, g), "hangar_container_oom_kills_total", "testkit"); ok && v != 0 {
		t.Errorf("hangar_container_oom_kills_total{testkit} = %v after a plain kill, want 0", v)
	}
}

// A provider that runs past its memory limit is OOM-killed; the call says
// so and the OOM counter counts it.
//
// On a cgroup v1 engine the "oom" event can be lost by the engine itself:
// containerd's v1 OOM monitor drops the notification when the container's
// cgroup is already deleted by the time it reads it (pkg/oom/v1 process()),
// which happens now and then on a loaded machine. The gateway then cannot
// know. The test watches the engine's events too, and when the engine sent
// no "oom" event it tries once more instead of blaming the gateway.
func TestOOMKill(t *testing.T) {
	g := recGatewayYAML(t, `
mcp_servers:
  testkit:
    mode: docker
    image: mcp-hangar/testkit:dev
    start_timeout_s: 30
    resources: {memory: 16m}
`)
	s := connect(t, g.MCPURL)

	const attempts = 2
	exits := 0
	for attempt := 1; ; attempt++ {
		// hangar_start forces a start even inside a crash-loop backoff.
		s.mustCall(t, "hangar_start", map[string]any{"mcp_server": "testkit"})
		id := recOnlyContainer(t, g.Instance, "testkit")
		if attempt == 1 {
			ctx, cancel := recDockerCtx()
			ins, err := docker.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
			cancel()
			if err != nil {
				t.Fatalf("inspect: %v", err)
			}
			if hc := ins.Container.HostConfig; hc == nil || hc.Memory != 16<<20 {
				t.Fatalf("container memory limit = %+v, want 16 MiB", hc)
			}
		}
		engineOOM := recWatchOOM(t, id)

		began := time.Now()
		r := s.callOne(t, "testkit", "alloc", map[string]any{"mb": 64})
		t.Logf("attempt %d: alloc(64) with a 16m limit after %s: %v", attempt, time.Since(began), r)
		if r["success"] != false || str(r, "error_type") != "provider_crashed" {
			t.Fatalf("alloc(64) = %v, want success false with error_type provider_crashed", r)
		}
		exits++
		e := str(r, "error")
		if !strings.Contains(e, "exit 137") {
			t.Errorf("alloc(64) error = %q, want it to say exit 137, oom", e)
		}
		if strings.Contains(e, "oom") {
			break
		}
		// The engine's "oom" event precedes its "die", so by now it is
		// either in the stream or never coming.
		if sawOOM, log := engineOOM(); sawOOM {
			t.Fatalf("alloc(64) error = %q, want it to say oom: the engine did report the OOM kill, the gateway missed it. Engine events:\n%s", e, log)
		} else if attempt >= attempts {
			t.Fatalf("alloc(64) error = %q, want it to say oom; the engine itself sent no oom event for the container %d times in a row (containerd cgroup v1 drops it when the cgroup is gone first). Engine events:\n%s", e, attempts, log)
		} else {
			t.Logf("the engine sent no oom event for %.12s (a known containerd cgroup v1 race), trying again. Engine events:\n%s", id, log)
		}
	}
	recCheckMetric(t, g, s, "hangar_container_oom_kills_total", "testkit", 1)
	recCheckMetric(t, g, s, "hangar_backend_exits_total", "testkit", float64(exits))

	// The provider recovers on the next call (after two crashes in a row
	// it is in a crash-loop backoff, which hangar_start overrides).
	if exits > 1 {
		s.mustCall(t, "hangar_start", map[string]any{"mcp_server": "testkit"})
	}
	r := s.callOne(t, "testkit", "echo", map[string]any{"text": "after the oom"})
	if r["success"] != true || r["result"] != "after the oom" {
		t.Errorf("echo after the oom = %v, want success", r)
	}
}

// recWatchOOM follows the engine's events for one container. The returned
// function, called after the container died, says whether the engine sent
// an "oom" event for it, with the events seen (times relative to the call).
func recWatchOOM(t testing.TB, id string) func() (bool, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ev := docker.Events(ctx, client.EventsListOptions{
		Since:   strconv.FormatInt(time.Now().Add(-time.Second).Unix(), 10),
		Filters: make(client.Filters).Add("type", string(events.ContainerEventType)).Add("container", id),
	})
	return func() (bool, string) {
		defer cancel()
		now := time.Now()
		var b strings.Builder
		oom := false
		timeout := time.After(time.Second)
		for {
			select {
			case m := <-ev.Messages:
				at := time.Unix(0, m.TimeNano)
				fmt.Fprintf(&b, "  %s %.12s at %+.0fms exitCode=%s\n", m.Action, m.Actor.ID,
					float64(at.Sub(now).Microseconds())/1000, m.Actor.Attributes["exitCode"])
				if m.Action == events.ActionOOM {
					oom = true
				}
				if m.Action == events.ActionDestroy {
					return oom, b.String()
				}
			case err := <-ev.Err:
				fmt.Fprintf(&b, "  events: %v\n", err)
				return oom, b.String()
			case <-timeout:
				return oom, b.String()
			}
		}
	}
}

// An idle provider's container is removed after idle_ttl_s; one with a call
// in flight is not, however long the call.
func TestIdleGCRemovesContainer(t *testing.T) {
	g := recGatewayYAML(t, `
mcp_servers:
  idle:
    mode: docker
    image: mcp-hangar/testkit:dev
    start_timeout_s: 30
    idle_ttl_s: 1
  busy:
    mode: docker
    image: mcp-hangar/testkit:dev
    start_timeout_s: 30
    idle_ttl_s: 1
`)
	s := connect(t, g.MCPURL)

	r := s.callOne(t, "idle", "echo", map[string]any{"text": "hi"})
	if r["success"] != true {
		t.Fatalf("echo = %v, want success", r)
	}
	first := recOnlyContainer(t, g.Instance, "idle")
	took := recWaitContainers(t, g.Instance, "idle", 0, 3*time.Second)
	t.Logf("idle container removed %s after the call", took)
	if st := s.providerState(t, "idle"); st != "cold" {
		t.Errorf("state after idle collection = %q, want cold", st)
	}
	_, _, meta := recDetails(t, s, "idle")
	if id := str(meta, "container_id"); id != "" {
		t.Errorf("hangar_details container_id after idle collection = %q, want empty", id)
	}

	r = s.callOne(t, "idle", "echo", map[string]any{"text": "again"})
	if r["success"] != true || r["result"] != "again" {
		t.Errorf("echo after idle collection = %v, want success", r)
	}
	if second := recOnlyContainer(t, g.Instance, "idle"); second == first {
		t.Errorf("container after the restart is the collected one (%.12s)", first)
	}

	// A call in flight outlasting the TTL keeps the provider.
	ch := recCallAsync(s, "busy", "sleep", map[string]any{"ms": 2500}, 10)
	waitInflight(t, s, "busy", 1, 10*time.Second)
	busy := containerOf(t, s, "busy")
	o := recAwait(t, ch, 20*time.Second, "sleep(2500) on busy")
	if o.res["success"] != true || o.res["result"] != "slept 2500 ms" {
		t.Errorf("sleep(2500) = %v, want success (the provider must not be collected under a call)", o.res)
	}
	list := containers(t, g.Instance, "busy")
	if len(list) != 1 || list[0].ID != busy {
		t.Errorf("right after the long call, busy containers = %s, want still %.12s", describe(list), busy)
	}
	// And once idle it goes too.
	took = recWaitContainers(t, g.Instance, "busy", 0, 3*time.Second)
	t.Logf("busy container removed %s after its call returned", took)
}

// A provider whose health check times out goes DEGRADED and comes back to
// READY when the next check after the backoff succeeds.
func TestHealthCheckDegradesAndRecovers(t *testing.T) {
	g := recGatewayYAML(t, `
mcp_servers:
  testkit:
    mode: docker
    image: mcp-hangar/testkit:dev
    start_timeout_s: 30
    health_check_interval_s: 1
    max_consecutive_failures: 1
`)
	s := connect(t, g.MCPURL)
	s.mustCall(t, "hangar_start", map[string]any{"mcp_server": "testkit"})
	id := recOnlyContainer(t, g.Instance, "testkit")

	ctx, cancel := recDockerCtx()
	_, err := docker.ContainerPause(ctx, id, client.ContainerPauseOptions{})
	cancel()
	if err != nil {
		t.Fatalf("pause: %v", err)
	}
	paused := true
	unpause := func() {
		if !paused {
			return
		}
		paused = false
		ctx, cancel := recDockerCtx()
		defer cancel()
		if _, err := docker.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{}); err != nil && !isNotFound(err) {
			t.Errorf("unpause: %v", err)
		}
	}
	// Runs before the gateway's cleanup (cleanups run last first).
	t.Cleanup(unpause)
	pausedAt := time.Now()

	// Due after 1s, times out after 5s more.
	took := recWaitState(t, s, "testkit", "degraded", 10*time.Second)
	t.Logf("degraded %s after the pause", took)
	// Quick, before the re-check after the 1s backoff: a late unpause
	// would only make that re-check succeed later, within its timeout.
	_, health, _ := recDetails(t, s, "testkit")
	h := s.mustCall(t, "hangar_health", nil)
	unpause()
	t.Logf("paused for %s", time.Since(pausedAt))

	if f, _ := health["consecutive_failures"].(float64); f < 1 {
		t.Errorf("consecutive_failures while degraded = %v, want >= 1 (health %v)", health["consecutive_failures"], health)
	}
	failedAt := str(health, "last_failure_at")
	if failedAt == "" {
		t.Errorf("last_failure_at while degraded is not set (health %v)", health)
	}
	if str(h, "status") != "degraded" {
		t.Errorf("hangar_health status while degraded = %q, want degraded (%v)", str(h, "status"), h)
	}
	byState, _ := h["mcp_servers"].(map[string]any)
	if bs, _ := byState["by_state"].(map[string]any); bs["degraded"] != float64(1) {
		t.Errorf("hangar_health by_state = %v, want degraded 1", byState["by_state"])
	}

	took = recWaitState(t, s, "testkit", "ready", 10*time.Second)
	t.Logf("ready again %s after the unpause", took)
	_, health, meta := recDetails(t, s, "testkit")
	if f, _ := health["consecutive_failures"].(float64); f != 0 {
		t.Errorf("consecutive_failures after recovery = %v, want 0 (health %v)", health["consecutive_failures"], health)
	}
	okAt := str(health, "last_success_at")
	if okAt == "" {
		t.Errorf("last_success_at after recovery is not set (health %v)", health)
	} else if a, b := recTime(t, okAt), recTime(t, failedAt); !a.After(b) {
		t.Errorf("last_success_at %s is not after last_failure_at %s", okAt, failedAt)
	}
	if c := str(meta, "container_id"); c != id {
		t.Errorf("container after recovery = %q, want the same %q (recovery does not restart)", c, id)
	}
	if st := str(s.mustCall(t, "hangar_health", nil), "status"); st != "healthy" {
		t.Errorf("hangar_health status after recovery = %q, want healthy", st)
	}
	r := s.callOne(t, "testkit", "echo", map[string]any{"text": "recovered"})
	if r["success"] != true || r["result"] != "recovered" {
		t.Errorf("echo after recovery = %v, want success", r)
	}
}

// recTime parses an RFC 3339 time of a tool answer.
func recTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Errorf("time %q: %v", s, err)
	}
	return v
}
