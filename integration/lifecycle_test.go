package integration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/dockerrt"
)

const mathConfig = `
mcp_servers:
  math:
    mode: docker
    image: mcp-hangar/math:dev
    start_timeout_s: 30
`

// A cold provider started with hangar_start serves calls from one container,
// reports tool errors as such, and leaves nothing behind once stopped.
func TestStartAndCallMath(t *testing.T) {
	g := startGateway(t, mathConfig)
	s := connect(t, g.MCPURL)

	if n := countContainers(t, g.Instance, ""); n != 0 {
		t.Fatalf("%d containers before any start, want 0 (providers start cold)", n)
	}

	st := s.mustCall(t, "hangar_start", map[string]any{"mcp_server": "math"})
	if got := str(st, "state"); got != "ready" {
		t.Errorf("hangar_start state = %q, want ready (answer %v)", got, st)
	}
	tools := stringList(st["tools"])
	slices.Sort(tools)
	if want := []string{"add", "divide", "multiply", "subtract"}; !slices.Equal(tools, want) {
		t.Errorf("hangar_start tools = %v, want %v", tools, want)
	}
	if n := countContainers(t, g.Instance, "math"); n != 1 {
		t.Errorf("%d containers labelled for math while ready, want 1", n)
	}

	r := s.callOne(t, "math", "add", map[string]any{"a": 1, "b": 2})
	if r["success"] != true || r["result"] != float64(3) {
		t.Errorf("add(1, 2) = %v, want success with result 3", r)
	}

	r = s.callOne(t, "math", "divide", map[string]any{"a": 1, "b": 0})
	if r["success"] != false || str(r, "error_type") != "tool_error" {
		t.Errorf("divide(1, 0) = %v, want success false with error_type tool_error", r)
	}
	if !strings.Contains(str(r, "error"), "division by zero") {
		t.Errorf("divide(1, 0) error = %q, want the tool's message (division by zero)", str(r, "error"))
	}
	if n := countContainers(t, g.Instance, "math"); n != 1 {
		t.Errorf("%d containers labelled for math after the calls, want still 1", n)
	}

	stop := s.mustCall(t, "hangar_stop", map[string]any{"mcp_server": "math"})
	if str(stop, "stopped") != "math" || str(stop, "reason") != "manual_stop" {
		t.Errorf("hangar_stop = %v, want {stopped: math, reason: manual_stop}", stop)
	}
	// No wait: the stop must have removed the container before answering.
	if left := containers(t, g.Instance, ""); len(left) != 0 {
		t.Errorf("right after hangar_stop, %d container(s) remain: %s", len(left), describe(left))
	}
	if st := s.providerState(t, "math"); st != "cold" {
		t.Errorf("state after hangar_stop = %q, want cold", st)
	}
}

// Many first calls racing on a cold provider share one start: exactly one
// container is ever created.
func TestConcurrentColdCallsStartOneContainer(t *testing.T) {
	const callers = 32
	g := startGateway(t, `
mcp_servers:
  testkit:
    mode: docker
    image: mcp-hangar/testkit:dev
    start_timeout_s: 30
    max_concurrency: 50
`)
	sessions := make([]*session, 4)
	for i := range sessions {
		sessions[i] = connect(t, g.MCPURL)
	}

	// Events since a moment before the calls: the engine replays what
	// happened after "since" and then streams, so no create can slip
	// between subscribing and calling.
	since := time.Now().Add(-time.Second)
	ectx, stopEvents := context.WithCancel(context.Background())
	defer stopEvents()
	ev := docker.Events(ectx, client.EventsListOptions{
		Since: strconv.FormatInt(since.Unix(), 10),
		Filters: make(client.Filters).
			Add("type", string(events.ContainerEventType)).
			Add("event", string(events.ActionCreate)).
			Add("label", dockerrt.LabelOwner+"="+g.Instance),
	})
	created := map[string]bool{}
	collected := make(chan error, 1)
	go func() {
		for {
			select {
			case m := <-ev.Messages:
				created[m.Actor.ID] = true
			case err := <-ev.Err:
				if ectx.Err() != nil {
					err = nil
				}
				collected <- err
				return
			case <-ectx.Done():
				collected <- nil
				return
			}
		}
	}()

	var wg sync.WaitGroup
	errs := make([]error, callers)
	start := make(chan struct{})
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			text := fmt.Sprintf("hello-%d", i)
			m, isErr, raw, err := sessions[i%len(sessions)].callE(ctx, "hangar_call", one("testkit", "echo", map[string]any{"text": text}))
			switch {
			case err != nil:
				errs[i] = err
			case isErr || m == nil:
				errs[i] = fmt.Errorf("hangar_call failed: %s", raw)
			default:
				r, err := firstResult(m)
				if err != nil {
					errs[i] = err
				} else if r["success"] != true || r["result"] != text {
					errs[i] = fmt.Errorf("result %v, want success with %q", r, text)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
	}

	// Let the last events arrive, then stop listening.
	time.Sleep(time.Second)
	stopEvents()
	if err := <-collected; err != nil {
		t.Fatalf("docker events: %v", err)
	}
	if len(created) != 1 {
		t.Errorf("%d containers were created for %d concurrent cold calls, want exactly 1: %v", len(created), callers, created)
	}

	list := containers(t, g.Instance, "testkit")
	if len(list) != 1 {
		t.Fatalf("%d testkit containers exist after the calls, want 1: %s", len(list), describe(list))
	}
	d := sessions[0].mustCall(t, "hangar_details", map[string]any{"mcp_server": "testkit"})
	meta, _ := d["meta"].(map[string]any)
	if id := str(meta, "container_id"); id != list[0].ID {
		t.Errorf("hangar_details container_id = %q, want the one container %s", id, list[0].ID)
	}
	if !created[list[0].ID] {
		t.Errorf("the running container %.12s is not the one the create event named (%v)", list[0].ID, created)
	}
}

// A call in flight when its provider crashes fails at once with the crash,
// and the next call gets a fresh container.
func TestCrashMidCallReturnsError(t *testing.T) {
	g := startGateway(t, `
mcp_servers:
  testkit:
    mode: docker
    image: mcp-hangar/testkit:dev
    start_timeout_s: 30
    call_timeout_s: 10
`)
	s := connect(t, g.MCPURL)
	s.mustCall(t, "hangar_start", map[string]any{"mcp_server": "testkit"})
	first := containerOf(t, s, "testkit")

	type outcome struct {
		res     map[string]any
		err     error
		elapsed time.Duration
	}
	slept := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		args := map[string]any{"calls": []any{map[string]any{
			"mcp_server": "testkit", "tool": "sleep", "arguments": map[string]any{"ms": 5000}, "timeout": 10,
		}}}
		began := time.Now()
		m, isErr, raw, err := s.callE(ctx, "hangar_call", args)
		o := outcome{elapsed: time.Since(began), err: err}
		if err == nil && (isErr || m == nil) {
			o.err = fmt.Errorf("hangar_call failed: %s", raw)
		}
		if o.err == nil {
			o.res, o.err = firstResult(m)
		}
		slept <- o
	}()

	// Crash only once the sleep is really running in the provider.
	waitInflight(t, s, "testkit", 1, 5*time.Second)
	crash := s.callOne(t, "testkit", "crash", map[string]any{"code": 1})
	t.Logf("the crash call itself: %v", crash)
	if crash["success"] != false {
		t.Errorf("crash call = %v, want it to fail", crash)
	}

	var o outcome
	select {
	case o = <-slept:
	case <-time.After(20 * time.Second):
		t.Fatal("the sleeping call did not return within 20s of the crash")
	}
	if o.err != nil {
		t.Fatalf("sleeping call: %v", o.err)
	}
	t.Logf("sleeping call returned after %s: %v", o.elapsed, o.res)
	if o.res["success"] != false || str(o.res, "error_type") != "provider_crashed" {
		t.Errorf("sleeping call = %v, want success false with error_type provider_crashed", o.res)
	}
	if e := str(o.res, "error"); !strings.HasPrefix(e, "provider_crashed: testkit (exit 1") {
		t.Errorf("sleeping call error = %q, want it to start with %q", e, "provider_crashed: testkit (exit 1")
	}
	if o.elapsed >= 3*time.Second {
		t.Errorf("sleeping call took %s to fail, want < 3s (the crash must end it, not its 5s sleep)", o.elapsed)
	}

	r := s.callOne(t, "testkit", "echo", map[string]any{"text": "after the crash"})
	if r["success"] != true || r["result"] != "after the crash" {
		t.Errorf("echo after the crash = %v, want success", r)
	}
	second := containerOf(t, s, "testkit")
	if second == "" || second == first {
		t.Errorf("container after the crash = %q, want a new one (the crashed one was %q)", second, first)
	}
	if list := containers(t, g.Instance, "testkit"); len(list) != 1 {
		t.Errorf("%d testkit containers after the restart, want 1: %s", len(list), describe(list))
	}
}

// containerOf returns the provider's container ID from hangar_details.
func containerOf(t testing.TB, s *session, id string) string {
	t.Helper()
	d := s.mustCall(t, "hangar_details", map[string]any{"mcp_server": id})
	meta, _ := d["meta"].(map[string]any)
	return str(meta, "container_id")
}

// waitInflight waits until hangar_details shows at least n calls in flight.
func waitInflight(t testing.TB, s *session, id string, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		d := s.mustCall(t, "hangar_details", map[string]any{"mcp_server": id})
		meta, _ := d["meta"].(map[string]any)
		if f, _ := meta["in_flight"].(float64); int(f) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: fewer than %d calls in flight after %s: %v", id, n, within, meta)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Providers that cannot start fail hangar_start with the cause, end DEAD
// and leave no container.
func TestStartFailures(t *testing.T) {
	g := startGateway(t, `
mcp_servers:
  missing-image:
    mode: docker
    image: mcp-hangar/nope:dev
    start_timeout_s: 10
  exits:
    mode: docker
    image: mcp-hangar/testkit:dev
    args: ["--exit-on-start", "3", "--stderr-lines", "2"]
    start_timeout_s: 10
  hangs:
    mode: docker
    image: mcp-hangar/testkit:dev
    args: ["--hang"]
    start_timeout_s: 2
`)
	s := connect(t, g.MCPURL)

	for _, tc := range []struct {
		name     string
		server   string
		contains []string
		min, max time.Duration
	}{
		{name: "ImageMissing", server: "missing-image", contains: []string{"mcp-hangar/nope:dev"}, max: 5 * time.Second},
		{name: "ExitOnStart", server: "exits", contains: []string{"exit 3", "testkit stderr line 2"}, max: 5 * time.Second},
		// start_timeout_s is 2; the answer may also wait for the unanswering
		// container to be stopped, but must come at about 6s at most (and
		// well before hangar_start's own budget of start_timeout + 5s).
		{name: "Hang", server: "hangs", contains: []string{"timeout"}, min: 2 * time.Second, max: 6500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			_, isErr, text := s.call(t, "hangar_start", map[string]any{"mcp_server": tc.server})
			took := time.Since(began)
			t.Logf("hangar_start %s after %s: %s", tc.server, took, text)
			if !isErr {
				t.Fatalf("hangar_start %s succeeded, want an error: %s", tc.server, text)
			}
			if prefix := "start_failed: " + tc.server; !strings.HasPrefix(text, prefix) {
				t.Errorf("error = %q, want it to start with %q", text, prefix)
			}
			for _, want := range tc.contains {
				if !strings.Contains(text, want) {
					t.Errorf("error = %q, want it to mention %q", text, want)
				}
			}
			if took < tc.min || took > tc.max {
				t.Errorf("hangar_start %s failed after %s, want between %s and %s", tc.server, took, tc.min, tc.max)
			}
			if st := s.providerState(t, tc.server); st != "dead" {
				t.Errorf("state after the failed start = %q, want dead", st)
			}
			if left := containers(t, g.Instance, ""); len(left) != 0 {
				t.Errorf("after the failed start, %d container(s) remain: %s", len(left), describe(left))
			}
		})
	}
}

// The gateway speaks to providers of either protocol era, and does not
// make a legacy-only provider wait for a server/discover answer.
func TestLegacyAndModernProviders(t *testing.T) {
	g := startGateway(t, `
mcp_servers:
  legacy:
    mode: docker
    image: mcp-hangar/testkit:dev
    args: ["--protocol", "legacy"]
    start_timeout_s: 30
  modern:
    mode: docker
    image: mcp-hangar/testkit:dev
    args: ["--protocol", "modern"]
    start_timeout_s: 30
`)
	s := connect(t, g.MCPURL)

	for _, id := range []string{"legacy", "modern"} {
		began := time.Now()
		st := s.mustCall(t, "hangar_start", map[string]any{"mcp_server": id})
		took := time.Since(began)
		t.Logf("hangar_start %s: %s (%v)", id, took, st["tools"])
		if str(st, "state") != "ready" {
			t.Errorf("%s: state = %q, want ready", id, str(st, "state"))
		}
		if !slices.Contains(stringList(st["tools"]), "echo") {
			t.Errorf("%s: tools %v lack echo", id, st["tools"])
		}
		if id == "legacy" && took >= 3*time.Second {
			t.Errorf("legacy provider took %s to start, want < 3s (no waiting on server/discover)", took)
		}
		text := "hi from " + id
		r := s.callOne(t, id, "echo", map[string]any{"text": text})
		if r["success"] != true || r["result"] != text {
			t.Errorf("%s: echo = %v, want success with %q", id, r, text)
		}
	}
}
