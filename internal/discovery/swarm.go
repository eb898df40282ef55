package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/config"
)

// SwarmAPI is the part of the engine client the Swarm source uses. The
// engine must be a Swarm manager: only managers list services.
type SwarmAPI interface {
	ServiceList(ctx context.Context, opts client.ServiceListOptions) (client.ServiceListResult, error)
	ServiceInspect(ctx context.Context, id string, opts client.ServiceInspectOptions) (client.ServiceInspectResult, error)
	NetworkList(ctx context.Context, opts client.NetworkListOptions) (client.NetworkListResult, error)
	Events(ctx context.Context, opts client.EventsListOptions) client.EventsResult
}

var _ SwarmAPI = (*client.Client)(nil)

// serviceActions change the set of candidates: a service came, changed
// (labels, image, networks, replicas) or went. Task events are none of
// ours: Swarm balances a service's tasks behind its name.
var serviceActions = []events.Action{events.ActionCreate, events.ActionUpdate, events.ActionRemove}

var (
	// ErrNoSharedNetwork means a service is on no network the gateway is
	// on, so its name does not resolve from the gateway.
	ErrNoSharedNetwork = errors.New("shares no network with the gateway: attach the service to one of the gateway's overlay networks")
	// errSwarmStdio replaces the container's stdin rule: a service's tasks
	// are reached over the network only.
	errSwarmStdio = &LabelError{Label: LabelMode, Value: ModeStdio, ShowValue: true,
		Reason: "not available for Swarm services (the gateway reaches a service by name over the network): use mode http"}
)

// ServiceSnapshot is what discovery needs to know about a Swarm service;
// the Swarm source fills it, DecodeService turns it into a candidate.
type ServiceSnapshot struct {
	ID, Name string
	Image    string // as the service spec names it, often "repo:tag@sha256:…"
	Labels   map[string]string
	Networks []string // names of the networks its tasks join
	// Replicas is the number of tasks Swarm keeps; -1 for a global
	// service (one per node).
	Replicas int
	// Job: a replicated or global job runs to completion; it serves nothing.
	Job bool
}

// DecodeService returns the candidate s describes: the same labels and
// decoder as a container, reached by the service's name (Swarm's virtual
// IP balances the tasks) on a network the gateway shares with it.
// ErrNotEnabled and ErrNotRunning (scaled to zero) mean no candidate; a
// *DecodeError names each problem.
func (d Decoder) DecodeService(s ServiceSnapshot) (Candidate, error) {
	// The container decoder reaches a candidate by the address it has on
	// a network; a service's address is its name, on each shared network.
	nets := map[string]string{}
	for _, n := range s.Networks {
		if len(d.PreferNetworks) == 0 || slices.Contains(d.PreferNetworks, n) {
			nets[n] = s.Name
		}
	}
	c, err := d.Decode(ContainerSnapshot{
		ID: s.ID, Name: s.Name, Image: s.Image, Labels: s.Labels, Networks: nets,
		Running: s.Replicas != 0 && !s.Job,
	})
	var de *DecodeError
	switch {
	case errors.Is(err, ErrNotRunning) && s.Job:
		return Candidate{}, &DecodeError{Problems: []error{errors.New("a Swarm job runs to completion and serves nothing: use a replicated or global service")}}
	case errors.As(err, &de):
		return Candidate{}, &DecodeError{Problems: swarmProblems(de.Problems)}
	case err != nil:
		return Candidate{}, err
	}
	c.Source = SourceSwarm
	c.ContainerID, c.ServiceID = "", s.ID
	c.Spec.Origin = SourceSwarm
	return c, nil
}

// swarmProblems rewrites the container-only reasons of a decode.
func swarmProblems(in []error) []error {
	out := make([]error, 0, len(in))
	for _, p := range in {
		var le *LabelError
		switch {
		case errors.Is(p, ErrNoAddress):
			out = append(out, ErrNoSharedNetwork)
		case errors.As(p, &le) && le.Reason == reasonNeedsStdin:
			out = append(out, errSwarmStdio)
		default:
			out = append(out, p)
		}
	}
	return out
}

// Swarm finds Swarm services labelled mcp.hangar.enabled=true.
type Swarm struct {
	api     SwarmAPI
	mode    string
	filter  Filter
	decoder Decoder
	log     *slog.Logger
}

// NewSwarm returns a Swarm source for src. gatewayNetworks are the
// networks the gateway's own container is on: a service is reached by
// name on one of them. Empty (the gateway is not in a container) means
// any network the service is on, which resolves only where the gateway's
// resolver knows the service name.
func NewSwarm(api SwarmAPI, src config.Source, gatewayNetworks []string, log *slog.Logger) *Swarm {
	if log == nil {
		log = slog.Default()
	}
	return &Swarm{
		api:     api,
		mode:    modeOf(src),
		filter:  Filter{Labels: src.Filters.Labels, Networks: src.Filters.Networks},
		decoder: Decoder{PreferNetworks: gatewayNetworks},
		log:     log.With(FieldSource, SourceSwarm),
	}
}

// Type is SourceSwarm.
func (s *Swarm) Type() string { return SourceSwarm }

// Mode is additive or authoritative.
func (s *Swarm) Mode() string { return s.mode }

// List decodes every labelled service. A service that cannot be decoded
// is a Problem of the listing and never stops the others.
func (s *Swarm) List(ctx context.Context) (Listing, error) {
	lctx, cancel := context.WithTimeout(ctx, dockerCallTimeout)
	defer cancel()
	res, err := s.api.ServiceList(lctx, client.ServiceListOptions{Filters: s.filter.engineFilters(enabledFilter())})
	if err != nil {
		return Listing{}, fmt.Errorf("list swarm services: %w", err)
	}
	// A service names its networks by ID; the filters and the gateway's
	// own networks are names.
	nres, err := s.api.NetworkList(lctx, client.NetworkListOptions{Filters: make(client.Filters).Add("scope", "swarm")})
	if err != nil {
		return Listing{}, fmt.Errorf("list swarm networks: %w", err)
	}
	names := make(map[string]string, len(nres.Items))
	for _, n := range nres.Items {
		names[n.ID] = n.Name
	}

	snaps := make([]ServiceSnapshot, 0, len(res.Items))
	for _, svc := range res.Items {
		snap := serviceSnapshot(svc, names)
		if s.filter.Match(ContainerSnapshot{Labels: snap.Labels, Networks: presence(snap.Networks)}) {
			snaps = append(snaps, snap)
		}
	}
	slices.SortFunc(snaps, func(a, b ServiceSnapshot) int { return strings.Compare(a.Name+"\x00"+a.ID, b.Name+"\x00"+b.ID) })

	var out Listing
	for _, snap := range snaps {
		cand, err := s.decoder.DecodeService(snap)
		switch {
		case errors.Is(err, ErrNotEnabled), errors.Is(err, ErrNotRunning):
		case err != nil:
			out.Problems = append(out.Problems, Problem{Subject: fmt.Sprintf("service %s (%.12s)", snap.Name, snap.ID), Err: err})
		default:
			out.Candidates = append(out.Candidates, cand)
		}
	}
	return out, nil
}

// Removed implements Removals: the service of id is gone when the engine
// no longer knows it (docker service rm).
func (s *Swarm) Removed(ctx context.Context, id string) (bool, error) {
	ictx, cancel := context.WithTimeout(ctx, dockerCallTimeout)
	defer cancel()
	_, err := s.api.ServiceInspect(ictx, id, client.ServiceInspectOptions{})
	switch {
	case cerrdefs.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("inspect swarm service %.12s: %w", id, err)
	}
	return false, nil
}

func presence(names []string) map[string]string {
	out := make(map[string]string, len(names))
	for _, n := range names {
		out[n] = ""
	}
	return out
}

// serviceSnapshot reads a service's spec; networkNames maps network IDs to
// names (an ID it lacks is kept as is: the engine may name a network by
// name in an old spec).
func serviceSnapshot(svc swarm.Service, networkNames map[string]string) ServiceSnapshot {
	s := ServiceSnapshot{ID: svc.ID, Name: svc.Spec.Name, Labels: svc.Spec.Labels}
	if cs := svc.Spec.TaskTemplate.ContainerSpec; cs != nil {
		s.Image = cs.Image
	}
	seen := map[string]bool{}
	for _, a := range svc.Spec.TaskTemplate.Networks {
		n := a.Target
		if name, ok := networkNames[n]; ok {
			n = name
		}
		if !seen[n] {
			seen[n] = true
			s.Networks = append(s.Networks, n)
		}
	}
	slices.Sort(s.Networks)
	switch m := svc.Spec.Mode; {
	case m.Global != nil:
		s.Replicas = -1
	case m.Replicated != nil && m.Replicated.Replicas != nil:
		s.Replicas = int(*m.Replicated.Replicas)
	case m.Replicated != nil:
		s.Replicas = 1 // the engine's default
	case m.ReplicatedJob != nil, m.GlobalJob != nil:
		s.Job = true
	}
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels = maps.Clone(s.Labels)
	return s
}

// Watch calls onChange whenever a service is created, updated or removed,
// until ctx ends. Each (re)connection also calls onChange, since events
// may have been missed while the stream was down. A broken stream is
// reopened with backoff.
func (s *Swarm) Watch(ctx context.Context, onChange func()) {
	followEvents(ctx, s.log, "swarm", func(ctx context.Context) (bool, error) { return s.follow(ctx, onChange) })
}

func (s *Swarm) follow(ctx context.Context, onChange func()) (got bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in swarm event loop: %v", r)
		}
	}()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	actions := make([]string, len(serviceActions))
	for i, a := range serviceActions {
		actions[i] = string(a)
	}
	// No label filter: a service whose enabled label was just removed must
	// still trigger the re-list that deregisters it, and a removal event
	// carries no labels.
	res := s.api.Events(sctx, client.EventsListOptions{Filters: make(client.Filters).
		Add("type", string(events.ServiceEventType)).
		Add("event", actions...)})
	select {
	case err := <-res.Err:
		return false, orEOF(err)
	default:
	}
	onChange()
	for {
		select {
		case <-ctx.Done():
			return got, ctx.Err()
		case err := <-res.Err:
			return got, orEOF(err)
		case m := <-res.Messages:
			got = true
			if m.Type == events.ServiceEventType && slices.Contains(serviceActions, m.Action) {
				onChange()
			}
		}
	}
}
