package discovery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/config"
)

func svcSnap(labels ...string) ServiceSnapshot {
	return ServiceSnapshot{ID: "svc123456789abcdef", Name: "stack_web", Image: "mcp/web:1@sha256:bb",
		Labels: enabled(labels...), Networks: []string{"stack_mcp"}, Replicas: 2}
}

// TestDecodeService: a service's labels are a container's, and it is
// reached by its name on a network it shares with the gateway.
func TestDecodeService(t *testing.T) {
	t.Parallel()
	gw := Decoder{PreferNetworks: []string{"stack_mcp", "ingress"}}
	tests := []struct {
		name     string
		dec      Decoder
		snap     func() ServiceSnapshot
		endpoint string
		id       string
		err      error    // errors.Is target
		problems []string // substrings of the *DecodeError
	}{
		{name: "defaults", dec: gw, snap: func() ServiceSnapshot { return svcSnap() },
			endpoint: "http://stack_web:8080/mcp", id: "stack_web"},
		{name: "name port path", dec: gw, snap: func() ServiceSnapshot {
			return svcSnap(LabelName, "web", LabelPort, "9000", LabelPath, "/rpc")
		}, endpoint: "http://stack_web:9000/rpc", id: "web"},
		{name: "global service", dec: gw, snap: func() ServiceSnapshot {
			s := svcSnap(LabelName, "web")
			s.Replicas = -1
			return s
		}, endpoint: "http://stack_web:8080/mcp", id: "web"},
		{name: "gateway not in a container: any network", dec: Decoder{}, snap: func() ServiceSnapshot { return svcSnap(LabelName, "web") },
			endpoint: "http://stack_web:8080/mcp", id: "web"},
		{name: "not enabled", dec: gw, snap: func() ServiceSnapshot {
			s := svcSnap()
			s.Labels[LabelEnabled] = "false"
			return s
		}, err: ErrNotEnabled},
		{name: "scaled to zero", dec: gw, snap: func() ServiceSnapshot {
			s := svcSnap()
			s.Replicas = 0
			return s
		}, err: ErrNotRunning},
		{name: "job", dec: gw, snap: func() ServiceSnapshot {
			s := svcSnap()
			s.Replicas, s.Job = 0, true
			return s
		}, problems: []string{"a Swarm job runs to completion"}},
		{name: "no shared network", dec: gw, snap: func() ServiceSnapshot {
			s := svcSnap(LabelName, "web")
			s.Networks = []string{"other_net"}
			return s
		}, err: ErrNoSharedNetwork, problems: []string{"shares no network with the gateway"}},
		{name: "no network at all", dec: Decoder{}, snap: func() ServiceSnapshot {
			s := svcSnap(LabelName, "web")
			s.Networks = nil
			return s
		}, err: ErrNoSharedNetwork},
		{name: "stdio", dec: gw, snap: func() ServiceSnapshot { return svcSnap(LabelName, "web", LabelMode, ModeStdio) },
			problems: []string{"label mcp.hangar.mode: not available for Swarm services"}},
		{name: "bad labels listed together", dec: gw, snap: func() ServiceSnapshot {
			return svcSnap(LabelPort, "0", LabelPath, "rpc", LabelPrefix+"volumes", "/")
		}, problems: []string{"label mcp.hangar.volumes: unknown", "label mcp.hangar.port: must be 1..65535", "label mcp.hangar.path: must start with /"}},
		{name: "service name not a server name", dec: gw, snap: func() ServiceSnapshot {
			s := svcSnap()
			s.Name = "-bad"
			return s
		}, problems: []string{`container name "-bad" is not a valid MCP server name`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := tt.dec.DecodeService(tt.snap())
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if tt.problems != nil {
				var de *DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("err = %v, want a *DecodeError", err)
				}
				for _, p := range tt.problems {
					if !strings.Contains(err.Error(), p) {
						t.Errorf("err %q lacks %q", err, p)
					}
				}
			}
			if tt.err != nil || tt.problems != nil {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			check(t, "source", c.Source, SourceSwarm)
			check(t, "origin", c.Spec.Origin, SourceSwarm)
			check(t, "id", c.Spec.ID, tt.id)
			check(t, "endpoint", c.Spec.Endpoint, tt.endpoint)
			check(t, "mode", c.Spec.Mode, config.ModeRemote)
			check(t, "transport", c.Spec.Transport, config.TransportHTTP)
			check(t, "container", c.ContainerID, "")
			checkDefaults(t, c.Spec)
		})
	}
}

// TestDecodeServiceFingerprint: scaling a service or moving it to another
// network keeps its approval; a new image or label asks again.
func TestDecodeServiceFingerprint(t *testing.T) {
	t.Parallel()
	gw := Decoder{PreferNetworks: []string{"a", "b"}}
	fp := func(f func(*ServiceSnapshot)) string {
		s := svcSnap(LabelName, "web")
		s.Networks = []string{"a"}
		f(&s)
		c, err := gw.DecodeService(s)
		if err != nil {
			t.Fatal(err)
		}
		return c.Fingerprint
	}
	base := fp(func(*ServiceSnapshot) {})
	if got := fp(func(s *ServiceSnapshot) { s.Replicas = 7; s.Networks = []string{"b"}; s.ID = "other" }); got != base {
		t.Errorf("scaling/moving changed the fingerprint")
	}
	if got := fp(func(s *ServiceSnapshot) { s.Image = "mcp/web:2" }); got == base {
		t.Errorf("a new image kept the fingerprint")
	}
	if got := fp(func(s *ServiceSnapshot) { s.Labels[LabelPort] = "81" }); got == base {
		t.Errorf("a new label kept the fingerprint")
	}
}

// fakeSwarm answers from fixed data.
type fakeSwarm struct {
	services []swarm.Service
	networks []network.Summary
	listErr  error
	streams  chan client.EventsResult
	filters  chan client.Filters
}

func (f fakeSwarm) ServiceList(_ context.Context, opts client.ServiceListOptions) (client.ServiceListResult, error) {
	if !opts.Filters["label"][LabelEnabled+"=true"] {
		return client.ServiceListResult{}, errors.New("unexpected list options")
	}
	var out []swarm.Service
	for _, s := range f.services {
		keep := true
		for l := range opts.Filters["label"] {
			k, v, hasV := strings.Cut(l, "=")
			if got, ok := s.Spec.Labels[k]; !ok || (hasV && got != v) {
				keep = false
			}
		}
		if keep {
			out = append(out, s)
		}
	}
	return client.ServiceListResult{Items: out}, f.listErr
}

// ServiceInspect knows the services it lists, by ID.
func (f fakeSwarm) ServiceInspect(_ context.Context, id string, _ client.ServiceInspectOptions) (client.ServiceInspectResult, error) {
	for _, s := range f.services {
		if s.ID == id {
			return client.ServiceInspectResult{Service: s}, nil
		}
	}
	return client.ServiceInspectResult{}, cerrdefs.ErrNotFound
}

func (f fakeSwarm) NetworkList(_ context.Context, opts client.NetworkListOptions) (client.NetworkListResult, error) {
	if !opts.Filters["scope"]["swarm"] {
		return client.NetworkListResult{}, errors.New("unexpected network list options")
	}
	return client.NetworkListResult{Items: f.networks}, nil
}

func (f fakeSwarm) Events(_ context.Context, opts client.EventsListOptions) client.EventsResult {
	if f.filters != nil {
		f.filters <- opts.Filters
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

func service(id, name string, labels map[string]string, replicas uint64, netIDs ...string) swarm.Service {
	s := swarm.Service{ID: id}
	s.Spec.Name = name
	s.Spec.Labels = labels
	s.Spec.TaskTemplate.ContainerSpec = &swarm.ContainerSpec{Image: "mcp/" + name + ":1"}
	s.Spec.Mode.Replicated = &swarm.ReplicatedService{Replicas: &replicas}
	for _, n := range netIDs {
		s.Spec.TaskTemplate.Networks = append(s.Spec.TaskTemplate.Networks, swarm.NetworkAttachmentConfig{Target: n})
	}
	return s
}

func netSummary(id, name string) network.Summary {
	return network.Summary{Network: network.Network{ID: id, Name: name}}
}

func TestSwarmList(t *testing.T) {
	t.Parallel()
	api := fakeSwarm{
		networks: []network.Summary{netSummary("n1", "st_mcp"), netSummary("n2", "other")},
		services: []swarm.Service{
			service("s3", "st_zeta", enabled(LabelName, "zeta"), 1, "n1"),
			service("s1", "st_alpha", enabled(LabelName, "alpha", "team", "a"), 3, "n1", "n2"),
			service("s2", "st_far", enabled(LabelName, "far"), 1, "n2"),
			service("s4", "st_zero", enabled(LabelName, "zero"), 0, "n1"),
			service("s5", "st_plain", map[string]string{"team": "a"}, 1, "n1"),
		},
	}
	names := func(l Listing) (c, p []string) {
		for _, x := range l.Candidates {
			c = append(c, x.Name+"="+x.Spec.Endpoint)
		}
		for _, x := range l.Problems {
			p = append(p, x.Subject)
		}
		return c, p
	}

	s := NewSwarm(api, config.Source{Type: SourceSwarm}, []string{"st_mcp"}, quietLog())
	got, err := s.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	c, p := names(got)
	check(t, "candidates", strings.Join(c, " "), "alpha=http://st_alpha:8080/mcp zeta=http://st_zeta:8080/mcp")
	check(t, "problems", strings.Join(p, " "), "service st_far (s2)")
	if s.Type() != SourceSwarm || s.Mode() != ModeAdditive {
		t.Errorf("type %q mode %q", s.Type(), s.Mode())
	}

	// The docker source's filters: labels on the engine's side, networks
	// by name here.
	s = NewSwarm(api, config.Source{Type: SourceSwarm, Mode: ModeAuthoritative,
		Filters: config.SourceFilters{Labels: map[string]string{"team": "a"}}}, []string{"st_mcp"}, quietLog())
	got, _ = s.List(t.Context())
	c, p = names(got)
	check(t, "label filter", strings.Join(c, " ")+"|"+strings.Join(p, " "), "alpha=http://st_alpha:8080/mcp|")
	s = NewSwarm(api, config.Source{Type: SourceSwarm, Filters: config.SourceFilters{Networks: []string{"other"}}}, []string{"st_mcp"}, quietLog())
	got, _ = s.List(t.Context())
	c, p = names(got)
	check(t, "network filter", strings.Join(c, " ")+"|"+strings.Join(p, " "), "alpha=http://st_alpha:8080/mcp|service st_far (s2)")

	api.listErr = errors.New("this node is not a swarm manager")
	if _, err := NewSwarm(api, config.Source{}, nil, quietLog()).List(t.Context()); err == nil || !strings.Contains(err.Error(), "not a swarm manager") {
		t.Errorf("List = %v, want the engine's error", err)
	}
}

func TestSwarmWatch(t *testing.T) {
	t.Parallel()
	streams := make(chan client.EventsResult, 2)
	msgs := make(chan events.Message)
	streams <- client.EventsResult{Messages: msgs, Err: make(chan error)}
	filters := make(chan client.Filters, 4)
	s := NewSwarm(fakeSwarm{streams: streams, filters: filters}, config.Source{}, nil, quietLog())
	changes := make(chan string, 16)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Watch(ctx, func() { changes <- "change" })
	}()
	f := <-filters
	// No label filter: a removal event carries no labels.
	if !f["type"]["service"] || !f["event"]["create"] || !f["event"]["update"] || !f["event"]["remove"] || len(f["label"]) != 0 {
		t.Errorf("filters %v", f)
	}
	expectChange(t, changes, "on connect")
	for _, a := range []events.Action{events.ActionCreate, events.ActionUpdate, events.ActionRemove} {
		msgs <- events.Message{Type: events.ServiceEventType, Action: a, Actor: events.Actor{ID: "s1"}}
		expectChange(t, changes, "on "+string(a))
	}
	msgs <- events.Message{Type: events.NetworkEventType, Action: events.ActionCreate}
	msgs <- events.Message{Type: events.ServiceEventType, Action: events.ActionRemove}
	expectChange(t, changes, "on the second remove")
	select {
	case <-changes:
		t.Error("an irrelevant event caused a change")
	default:
	}
	cancel()
	<-done
}

func TestBuildSwarmSource(t *testing.T) {
	t.Parallel()
	cfg := config.Discovery{Sources: []config.Source{{Type: SourceSwarm}}}
	if _, err := BuildSources(cfg, nil, nil, quietLog()); err == nil {
		t.Error("a swarm source without an engine was built")
	}
	// An engine client that cannot list services is no swarm engine.
	if _, err := BuildSources(cfg, fakeDocker{}, nil, quietLog()); err == nil {
		t.Error("a swarm source was built on an engine without the service API")
	}
	srcs, err := BuildSources(cfg, engine{fakeDocker{}, fakeSwarm{}}, []string{"st_mcp"}, quietLog())
	if err != nil || len(srcs) != 1 || srcs[0].Type() != SourceSwarm {
		t.Fatalf("BuildSources = %v, %v", srcs, err)
	}
}

// engine is both APIs, as the engine client is.
type engine struct {
	fakeDocker
	fakeSwarm
}

func (e engine) Events(ctx context.Context, opts client.EventsListOptions) client.EventsResult {
	return e.fakeSwarm.Events(ctx, opts)
}

// TestServiceSnapshot: what a service's spec says, with its networks named.
func TestServiceSnapshot(t *testing.T) {
	t.Parallel()
	names := map[string]string{"n1": "st_mcp", "n2": "other"}
	two := uint64(2)
	tests := []struct {
		name string
		svc  func() swarm.Service
		want string // replicas job networks image
	}{
		{"replicated", func() swarm.Service { return service("s", "a", enabled(), 2, "n2", "n1") }, "2 false [other st_mcp] mcp/a:1"},
		{"replicas unset", func() swarm.Service {
			s := service("s", "a", nil, 0, "n1")
			s.Spec.Mode.Replicated.Replicas = nil
			return s
		}, "1 false [st_mcp] mcp/a:1"},
		{"global", func() swarm.Service {
			s := service("s", "a", nil, 0, "n1")
			s.Spec.Mode = swarm.ServiceMode{Global: &swarm.GlobalService{}}
			return s
		}, "-1 false [st_mcp] mcp/a:1"},
		{"job", func() swarm.Service {
			s := service("s", "a", nil, 0)
			s.Spec.Mode = swarm.ServiceMode{ReplicatedJob: &swarm.ReplicatedJob{TotalCompletions: &two}}
			return s
		}, "0 true [] mcp/a:1"},
		{"unknown network ID kept, duplicates once", func() swarm.Service { return service("s", "a", nil, 1, "zz", "n1", "n1") },
			"1 false [st_mcp zz] mcp/a:1"},
		{"no container spec", func() swarm.Service {
			s := service("s", "a", nil, 1)
			s.Spec.TaskTemplate.ContainerSpec = nil
			return s
		}, "1 false [] "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := tt.svc()
			s := serviceSnapshot(in, names)
			got := fmt.Sprintf("%d %v %v %s", s.Replicas, s.Job, s.Networks, s.Image)
			if got != tt.want {
				t.Errorf("snapshot = %q, want %q", got, tt.want)
			}
			if s.Labels == nil || s.Name != in.Spec.Name || s.ID != in.ID {
				t.Errorf("snapshot identity %+v", s)
			}
			// The snapshot's labels are its own: decoding never writes
			// through to the engine's answer.
			s.Labels["x"] = "y"
			if _, ok := in.Spec.Labels["x"]; ok {
				t.Error("the snapshot shares the service's label map")
			}
		})
	}
}
