package discovery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"golang.org/x/sync/errgroup"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
	"github.com/mcp-hangar/hangar/internal/retry"
)

// DockerAPI is the part of the engine client the Docker source uses.
type DockerAPI interface {
	ContainerList(ctx context.Context, opts client.ContainerListOptions) (client.ContainerListResult, error)
	ContainerInspect(ctx context.Context, id string, opts client.ContainerInspectOptions) (client.ContainerInspectResult, error)
	Events(ctx context.Context, opts client.EventsListOptions) client.EventsResult
}

var _ DockerAPI = (*client.Client)(nil)

const (
	// dockerCallTimeout bounds each short engine call; a hung engine must
	// not hang a scan.
	dockerCallTimeout = 10 * time.Second
	// inspectLimit caps the inspects of one listing.
	inspectLimit = 8
	// maxBackoff is the longest wait of retry.Reconnect: a stream that
	// lasted longer was healthy.
	maxBackoff = 10 * time.Second
)

// relevantActions change the set of candidates: a container came, went or
// was renamed (its name is the default server name). A paused container is
// still listed, so pause and unpause change nothing.
var relevantActions = []events.Action{
	events.ActionStart, events.ActionDie, events.ActionStop, events.ActionDestroy, events.ActionRename,
}

// Docker finds running containers labelled mcp.hangar.enabled=true.
type Docker struct {
	api     DockerAPI
	mode    string
	filter  Filter
	decoder Decoder
	log     *slog.Logger
}

// NewDocker returns a Docker source for src. preferNetworks are the
// networks the gateway is on. src.Filters.ComposeProject "auto" must have
// been resolved by the caller (ResolveFilter): here it means any project.
func NewDocker(api DockerAPI, src config.Source, preferNetworks []string, log *slog.Logger) *Docker {
	if log == nil {
		log = slog.Default()
	}
	return &Docker{
		api:     api,
		mode:    modeOf(src),
		filter:  ResolveFilter(src.Filters, ""),
		decoder: Decoder{PreferNetworks: preferNetworks},
		log:     log.With(FieldSource, SourceDocker),
	}
}

func modeOf(src config.Source) string {
	if src.Mode == "" {
		return ModeAdditive
	}
	return src.Mode
}

// Type is SourceDocker.
func (d *Docker) Type() string { return SourceDocker }

// Mode is additive or authoritative.
func (d *Docker) Mode() string { return d.mode }

func enabledFilter() client.Filters {
	return make(client.Filters).Add("label", LabelEnabled+"=true")
}

// List decodes every running labelled container. A container that cannot
// be decoded is a Problem of the listing and never stops the others.
func (d *Docker) List(ctx context.Context) (Listing, error) {
	lctx, cancel := context.WithTimeout(ctx, dockerCallTimeout)
	res, err := d.api.ContainerList(lctx, client.ContainerListOptions{Filters: d.filter.engineFilters(enabledFilter())})
	cancel()
	if err != nil {
		return Listing{}, fmt.Errorf("list containers: %w", err)
	}
	items := slices.DeleteFunc(slices.Clone(res.Items), func(c container.Summary) bool {
		// Containers the gateway created itself may inherit the labels
		// from their image; discovering them would loop. Another scope's
		// containers are not even a problem of ours: the filter is applied
		// before any inspect, on labels and network names.
		return c.Labels[dockerrt.LabelManaged] != "" || !d.filter.Match(summarySnapshot(c))
	})
	slices.SortFunc(items, func(a, b container.Summary) int {
		return strings.Compare(summaryName(a)+"\x00"+a.ID, summaryName(b)+"\x00"+b.ID)
	})

	snaps := make([]ContainerSnapshot, len(items))
	inspectErrs := make([]error, len(items))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(inspectLimit)
	for i, c := range items {
		snaps[i] = summarySnapshot(c)
		if !needsInspect(snaps[i]) {
			continue
		}
		g.Go(func() error {
			ictx, cancel := context.WithTimeout(gctx, dockerCallTimeout)
			defer cancel()
			r, err := d.api.ContainerInspect(ictx, c.ID, client.ContainerInspectOptions{})
			if err != nil {
				inspectErrs[i] = err
				return nil
			}
			mergeInspect(&snaps[i], r.Container)
			return nil
		})
	}
	_ = g.Wait()

	var out Listing
	for i, snap := range snaps {
		var cand Candidate
		err := inspectErrs[i]
		switch {
		case cerrdefs.IsNotFound(err):
			continue // removed since the listing
		case err != nil:
			err = fmt.Errorf("inspect: %w", err)
		default:
			cand, err = d.decoder.Decode(snap)
		}
		switch {
		case errors.Is(err, ErrNotEnabled), errors.Is(err, ErrNotRunning):
		case err != nil:
			out.Problems = append(out.Problems, Problem{Subject: containerSubject(snap), Err: err})
		default:
			out.Candidates = append(out.Candidates, cand)
		}
	}
	return out, nil
}

// Removed implements Removals: the container of id is gone when the
// engine no longer knows it (docker rm); a stopped one is not.
func (d *Docker) Removed(ctx context.Context, id string) (bool, error) {
	ictx, cancel := context.WithTimeout(ctx, dockerCallTimeout)
	defer cancel()
	_, err := d.api.ContainerInspect(ictx, id, client.ContainerInspectOptions{})
	switch {
	case cerrdefs.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("inspect container %.12s: %w", id, err)
	}
	return false, nil
}

func containerSubject(s ContainerSnapshot) string {
	return fmt.Sprintf("container %s (%.12s)", strings.TrimPrefix(s.Name, "/"), s.ID)
}

func summaryName(c container.Summary) string {
	if len(c.Names) == 0 {
		return ""
	}
	return strings.TrimPrefix(c.Names[0], "/")
}

// isUp: a paused container still counts, so pausing one does not make an
// authoritative source deregister it.
func isUp(s container.ContainerState) bool {
	return s == container.StateRunning || s == container.StatePaused
}

func summarySnapshot(c container.Summary) ContainerSnapshot {
	s := ContainerSnapshot{
		ID:      c.ID,
		Name:    summaryName(c),
		Image:   c.Image,
		ImageID: c.ImageID,
		Labels:  c.Labels,
		Running: isUp(c.State),
	}
	if c.NetworkSettings != nil {
		s.Networks = endpointIPs(c.NetworkSettings.Networks)
	}
	return s
}

// needsInspect: only an inspect tells whether stdin is open, and a listing
// may lack network details.
func needsInspect(s ContainerSnapshot) bool {
	if s.Labels[LabelMode] == ModeStdio {
		return true
	}
	for _, ip := range s.Networks {
		if ip != "" {
			return false
		}
	}
	return true
}

func mergeInspect(s *ContainerSnapshot, r container.InspectResponse) {
	if r.Config != nil {
		s.OpenStdin = r.Config.OpenStdin
	}
	if r.State != nil {
		s.Running = r.State.Running
	}
	if r.NetworkSettings != nil {
		s.Networks = endpointIPs(r.NetworkSettings.Networks)
	}
}

func endpointIPs(eps map[string]*network.EndpointSettings) map[string]string {
	out := make(map[string]string, len(eps))
	for name, ep := range eps {
		switch {
		case ep == nil:
			out[name] = ""
		case ep.IPAddress.IsValid():
			out[name] = ep.IPAddress.String()
		case ep.GlobalIPv6Address.IsValid():
			out[name] = ep.GlobalIPv6Address.String()
		default:
			out[name] = ""
		}
	}
	return out
}

// Watch calls onChange whenever a labelled container starts, stops, dies,
// is removed or renamed, until ctx ends. Each (re)connection also calls
// onChange, since events may have been missed while the stream was down.
// A broken stream is reopened with backoff.
func (d *Docker) Watch(ctx context.Context, onChange func()) {
	followEvents(ctx, d.log, "docker", func(ctx context.Context) (bool, error) { return d.follow(ctx, onChange) })
}

// followEvents runs follow, one engine event stream, until ctx ends, and
// opens it again with backoff whenever it ends; follow reports whether
// the stream delivered anything. kind names the stream in the log.
func followEvents(ctx context.Context, log *slog.Logger, kind string, follow func(context.Context) (bool, error)) {
	wait := retry.Reconnect()
	for ctx.Err() == nil {
		began := time.Now()
		got, err := follow(ctx)
		if ctx.Err() != nil {
			return
		}
		// A stream that delivered or lasted was healthy: start over. One
		// that fails at once keeps backing off.
		if got || time.Since(began) > maxBackoff {
			wait.Reset()
		}
		delay := wait.NextBackOff()
		log.Warn(kind+" event stream ended; reconnecting", FieldError, err, "retry_in", delay)
		if !retry.Sleep(ctx, delay) {
			return
		}
	}
}

func (d *Docker) follow(ctx context.Context, onChange func()) (got bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in docker event loop: %v", r)
		}
	}()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	actions := make([]string, len(relevantActions))
	for i, a := range relevantActions {
		actions[i] = string(a)
	}
	res := d.api.Events(sctx, client.EventsListOptions{Filters: d.filter.engineFilters(make(client.Filters).
		Add("type", string(events.ContainerEventType)).
		Add("label", LabelEnabled).
		Add("event", actions...))})
	// Events returns once the request is answered: if it failed, the error
	// is (almost always) waiting already.
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
			if m.Type == events.ContainerEventType && slices.Contains(relevantActions, m.Action) {
				onChange()
			}
		}
	}
}

func orEOF(err error) error {
	if err == nil {
		return io.EOF
	}
	return err
}
