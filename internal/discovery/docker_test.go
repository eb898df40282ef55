package discovery

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
)

// fakeDocker answers from fixed data. Each Events call takes the next
// stream from streams (or an error stream when there is none).
type fakeDocker struct {
	items    []container.Summary
	inspect  map[string]container.InspectResponse
	listErr  error
	streams  chan client.EventsResult
	calls    *atomic.Int32
	inspects *atomic.Int32
	filters  chan client.Filters
}

func (f fakeDocker) ContainerList(_ context.Context, opts client.ContainerListOptions) (client.ContainerListResult, error) {
	if !opts.Filters["label"][LabelEnabled+"=true"] || opts.All {
		return client.ContainerListResult{}, errors.New("unexpected list options")
	}
	return client.ContainerListResult{Items: f.items}, f.listErr
}

func (f fakeDocker) ContainerInspect(_ context.Context, id string, _ client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	if f.inspects != nil {
		f.inspects.Add(1)
	}
	r, ok := f.inspect[id]
	if !ok {
		return client.ContainerInspectResult{}, cerrdefs.ErrNotFound
	}
	return client.ContainerInspectResult{Container: r}, nil
}

func (f fakeDocker) Events(ctx context.Context, opts client.EventsListOptions) client.EventsResult {
	if f.calls != nil {
		f.calls.Add(1)
	}
	if f.filters != nil {
		select {
		case f.filters <- opts.Filters:
		default:
		}
	}
	select {
	case r := <-f.streams:
		return r
	default:
		errs := make(chan error, 1)
		errs <- errors.New("connection refused")
		return client.EventsResult{Messages: make(chan events.Message), Err: errs}
	}
}

func summary(id, name string, labels map[string]string, ip string) container.Summary {
	s := container.Summary{ID: id, Names: []string{"/" + name}, Image: "img:1", ImageID: "sha256:aa",
		Labels: labels, State: container.StateRunning,
		NetworkSettings: &container.NetworkSettingsSummary{Networks: map[string]*network.EndpointSettings{}}}
	if ip != "" {
		s.NetworkSettings.Networks["bridge"] = &network.EndpointSettings{IPAddress: netip.MustParseAddr(ip)}
	}
	return s
}

func enabled(kv ...string) map[string]string {
	m := map[string]string{LabelEnabled: "true"}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestDockerList(t *testing.T) {
	t.Parallel()
	var inspects atomic.Int32
	api := fakeDocker{
		items: []container.Summary{
			summary("id-web", "web", enabled(), "172.17.0.2"),
			summary("id-bad", "bad", enabled(LabelPort, "abc"), "172.17.0.3"),
			summary("id-own", "own", map[string]string{LabelEnabled: "true", dockerrt.LabelManaged: "true"}, "172.17.0.4"),
			summary("id-tty", "tty", enabled(LabelMode, "stdio"), ""),
			summary("id-closed", "closed", enabled(LabelMode, "stdio"), ""),
			summary("id-gone", "gone", enabled(LabelMode, "stdio"), ""),
			summary("id-nonet", "nonet", enabled(), ""),
		},
		inspect: map[string]container.InspectResponse{
			"id-tty":    {Config: &container.Config{OpenStdin: true}, State: &container.State{Running: true}},
			"id-closed": {Config: &container.Config{}, State: &container.State{Running: true}},
			"id-nonet": {Config: &container.Config{}, State: &container.State{Running: true},
				NetworkSettings: &container.NetworkSettings{Networks: map[string]*network.EndpointSettings{
					"mine": {IPAddress: netip.MustParseAddr("10.1.0.2")}}}},
		},
		inspects: &inspects,
	}
	d := NewDocker(api, config.Source{Type: "docker", Mode: "authoritative"}, []string{"mine"}, quietLog())
	if d.Type() != "docker" || d.Mode() != "authoritative" {
		t.Errorf("type %q mode %q", d.Type(), d.Mode())
	}
	l, err := d.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Candidate{}
	for _, c := range l.Candidates {
		got[c.Name] = c
	}
	if len(got) != 3 {
		t.Fatalf("candidates %v", l.Candidates)
	}
	check(t, "web endpoint", got["web"].Spec.Endpoint, "http://172.17.0.2:8080/mcp")
	check(t, "tty attach", got["tty"].Spec.AttachContainer, "id-tty")
	check(t, "nonet endpoint", got["nonet"].Spec.Endpoint, "http://10.1.0.2:8080/mcp")
	if inspects.Load() != 4 { // the three stdio ones and the one without networks
		t.Errorf("%d inspects", inspects.Load())
	}

	var msgs []string
	for _, p := range l.Problems {
		msgs = append(msgs, p.String())
	}
	want := []string{
		`container bad (id-bad): label mcp.hangar.port: must be 1..65535 (got "abc")`,
		`container closed (id-closed): label mcp.hangar.mode: needs a container started with an open stdin (docker run -i) (got "stdio")`,
	}
	if strings.Join(msgs, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems\n%s\nwant\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
}

func TestDockerListError(t *testing.T) {
	t.Parallel()
	d := NewDocker(fakeDocker{listErr: errors.New("engine down")}, config.Source{}, nil, quietLog())
	if d.Mode() != ModeAdditive {
		t.Errorf("default mode %q", d.Mode())
	}
	if _, err := d.List(t.Context()); err == nil || !strings.Contains(err.Error(), "engine down") {
		t.Errorf("err = %v", err)
	}
}

func TestDockerWatch(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	streams := make(chan client.EventsResult, 2)
	msgs := make(chan events.Message)
	errs := make(chan error, 1)
	streams <- client.EventsResult{Messages: msgs, Err: errs}
	filters := make(chan client.Filters, 1)
	api := fakeDocker{streams: streams, calls: &calls, filters: filters}
	d := NewDocker(api, config.Source{}, nil, quietLog())

	changes := make(chan string, 16)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Watch(ctx, func() { changes <- "change" })
	}()

	f := <-filters
	if !f["type"]["container"] || !f["label"][LabelEnabled] || !f["event"]["start"] || !f["event"]["die"] || !f["event"]["destroy"] {
		t.Errorf("filters %v", f)
	}
	expectChange(t, changes, "on connect")
	msgs <- events.Message{Type: events.ContainerEventType, Action: events.ActionStart, Actor: events.Actor{ID: "x"}}
	expectChange(t, changes, "on start")
	msgs <- events.Message{Type: events.ContainerEventType, Action: events.ActionExecStart}
	msgs <- events.Message{Type: events.ContainerEventType, Action: events.ActionDie}
	expectChange(t, changes, "on die")
	select {
	case <-changes:
		t.Error("an irrelevant event caused a change")
	default:
	}

	// The stream breaks: reconnect (after a failed attempt) and catch up.
	msgs2 := make(chan events.Message)
	errs <- errors.New("unexpected EOF")
	began := time.Now()
	waitFor(t, "a failed reconnect", func() bool { return calls.Load() >= 2 })
	streams <- client.EventsResult{Messages: msgs2, Err: make(chan error)}
	expectChange(t, changes, "after reconnecting")
	if time.Since(began) > 5*time.Second {
		t.Errorf("reconnect took %s", time.Since(began))
	}
	msgs2 <- events.Message{Type: events.ContainerEventType, Action: events.ActionDestroy}
	expectChange(t, changes, "on destroy after reconnect")

	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not return after cancel")
	}
}

func TestDockerWatchRecoversPanics(t *testing.T) {
	t.Parallel()
	streams := make(chan client.EventsResult, 1)
	msgs := make(chan events.Message, 1)
	streams <- client.EventsResult{Messages: msgs, Err: make(chan error)}
	d := NewDocker(fakeDocker{streams: streams}, config.Source{}, nil, quietLog())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var n atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Watch(ctx, func() {
			if n.Add(1) == 2 {
				panic("handler bug")
			}
		})
	}()
	msgs <- events.Message{Type: events.ContainerEventType, Action: events.ActionStart}
	waitFor(t, "panic survived", func() bool { return n.Load() >= 2 })
	cancel()
	<-done
}

func expectChange(t *testing.T, ch <-chan string, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("no change %s", what)
	}
}
