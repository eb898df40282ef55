// Package instance makes a gateway instance name unique on a Docker engine
// and names the instance by default.
//
// # The lease
//
// Every gateway labels the containers it creates with its instance name and
// removes, at start-up, the ones an earlier run of that name left behind.
// That is only safe when no other live gateway uses the name: a second one
// would remove the first one's containers. So before it touches any
// container a gateway takes the instance's lease, and the lease lives where
// the containers live, on the engine, since two gateways sharing an engine
// need not share a host or a file system.
//
// The lease is a Docker volume named "hangar-lease-<instance>" whose labels
// identify the holder (Holder: host, PID and process start time, PID
// namespace, container, listen address, since when, and a random token).
// Nothing is ever mounted from it; it exists for its name and labels:
//
//   - Taking it is one call. The engine creates a volume under a per-name
//     lock and, when the name exists, answers with the existing volume and
//     its first labels unchanged (verified on Engine 20.10, API 1.41). So of
//     any number of simultaneous starters exactly one finds its own token in
//     the answer: it holds the lease. The others see the winner.
//   - A holder that sees its token is alive by construction. Another holder
//     is checked (Checker): when it runs in a container other than ours, by
//     that container's running state (inspect); when it shares our PID
//     namespace (same host, or same container), by its PID and the start
//     time /proc gives for it, so a reused PID does not count; otherwise by
//     a GET of its /healthz on its recorded address. A holder that cannot be
//     checked at all (stdio on another host) counts as alive: refusing to
//     start is the safe mistake, and the error says how to clear it.
//   - A live holder: start-up fails with HeldError, naming it.
//   - A dead holder (kill -9, a crash, a lost host): its lease is taken
//     over. Volumes have no compare-and-delete, so two starters that both
//     found the same dead holder could each remove a lease the other has
//     just taken. A second volume, "<lease>-takeover-<dead token>", taken
//     the same way, elects one taker; only it removes the dead lease (after
//     checking it still names the dead token) and it removes the takeover
//     volume only once its own lease exists, so a late starter can never win
//     the takeover of a lease that is already gone. Losers retry and then
//     find the new, live holder.
//   - A clean shutdown removes the lease (Release). The leftovers of a dead
//     holder are reaped by the next holder, which knows by now that no one
//     else can own them.
//
// Limits: `docker volume prune --all` removes a live lease, since nothing
// mounts it; a second gateway could then start. A holder whose liveness
// cannot be checked (stdio or loopback on another host, an unreachable
// address) counts as alive, and the error names the volume to remove.
package instance

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v5"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/retry"
)

// Labels of a lease volume.
const (
	labelLease     = "io.mcp-hangar.lease" // instance name
	labelToken     = "io.mcp-hangar.lease.token"
	labelHost      = "io.mcp-hangar.lease.host"
	labelPID       = "io.mcp-hangar.lease.pid"
	labelPIDStart  = "io.mcp-hangar.lease.pid-start"
	labelPIDNS     = "io.mcp-hangar.lease.pidns"
	labelContainer = "io.mcp-hangar.lease.container"
	labelCtrName   = "io.mcp-hangar.lease.container-name"
	labelListen    = "io.mcp-hangar.lease.listen"
	labelSince     = "io.mcp-hangar.lease.since"
)

// VolumeName is the name of the lease volume of an instance.
func VolumeName(instance string) string { return "hangar-lease-" + instance }

// API is the part of the engine client the lease uses.
type API interface {
	VolumeCreate(ctx context.Context, opts client.VolumeCreateOptions) (client.VolumeCreateResult, error)
	VolumeInspect(ctx context.Context, id string, opts client.VolumeInspectOptions) (client.VolumeInspectResult, error)
	VolumeRemove(ctx context.Context, id string, opts client.VolumeRemoveOptions) (client.VolumeRemoveResult, error)
	ContainerInspect(ctx context.Context, id string, opts client.ContainerInspectOptions) (client.ContainerInspectResult, error)
}

var _ API = (*client.Client)(nil)

// HeldError: another live gateway holds the instance name.
type HeldError struct {
	Holder Holder
	Why    string // how it was found alive
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("instance %q is already running on this Docker engine: %s (%s); "+
		"stop it, or give this gateway another --instance name (if you know it is gone, remove the lease with: docker volume rm %s)",
		e.Holder.Instance, e.Holder, e.Why, VolumeName(e.Holder.Instance))
}

// ErrNotLease: the lease's volume name is taken by a volume that is not a
// lease.
var ErrNotLease = errors.New("lease name taken")

// ErrHeld matches a *HeldError with errors.Is.
var ErrHeld = errors.New("instance already running")

// Is makes errors.Is(err, ErrHeld) true for a *HeldError.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// callTimeout bounds each engine call of the lease.
const callTimeout = 10 * time.Second

// maxRounds bounds the takeover rounds of one Acquire: each round either
// wins, finds a live holder, or removes one dead holder.
const maxRounds = 6

// Checker decides whether a lease holder is alive. Proc and Probe default
// to /proc and an HTTP GET of /healthz; tests replace them.
type Checker struct {
	API API
	// Self is the process asking.
	Self Holder
	// Proc returns the start time of pid in the caller's PID namespace;
	// ok is false when there is no such process.
	Proc func(pid int) (start uint64, ok bool)
	// Probe GETs /healthz at addr (host:port): nil when a gateway answers;
	// a refused connection or errNotHealthy when none is there; any other
	// error when the address cannot be reached to tell.
	Probe func(ctx context.Context, addr string) error
	// Wait pauses between takeover rounds; nil waits retry.Contended.
	Wait func(ctx context.Context, round int) error

	contended backoff.BackOff
}

// Alive tells whether h still runs, and how that was found.
func (c *Checker) Alive(ctx context.Context, h Holder) (bool, string, error) {
	if h.Container != "" && h.Container != c.Self.Container {
		ictx, cancel := context.WithTimeout(ctx, callTimeout)
		res, err := c.API.ContainerInspect(ictx, h.Container, client.ContainerInspectOptions{})
		cancel()
		switch {
		case cerrdefs.IsNotFound(err):
			return false, "its container is gone", nil
		case err != nil:
			return false, "", fmt.Errorf("inspect the holder's container %s: %w", shortID(h.Container), err)
		case res.Container.State != nil && res.Container.State.Running:
			return true, "its container is running", nil
		default:
			return false, "its container is not running", nil
		}
	}
	if h.Container != "" && h.Container == c.Self.Container && h.PIDNS != c.Self.PIDNS {
		// Our own container with another PID namespace: it was restarted,
		// and a restart ends every process it ran.
		return false, "its container (ours) restarted since", nil
	}
	if h.PIDNS != "" && h.PIDNS == c.Self.PIDNS {
		proc := c.Proc
		if proc == nil {
			proc = procStart
		}
		start, ok := proc(h.PID)
		if ok && start == h.PIDStart {
			return true, fmt.Sprintf("process %d is running", h.PID), nil
		}
		return false, fmt.Sprintf("process %d is gone", h.PID), nil
	}
	if h.Listen != "" {
		addr, ok := probeAddr(h)
		if !ok {
			return true, "it listens on the loopback interface of another host, which cannot be checked from here", nil
		}
		probe := c.Probe
		if probe == nil {
			probe = probeHealthz
		}
		err := probe(ctx, addr)
		switch {
		case err == nil:
			return true, "http://" + addr + "/healthz answers", nil
		case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, errNotHealthy):
			// The host answers and no gateway is there.
			return false, "http://" + addr + "/healthz: " + err.Error(), nil
		default:
			// Unreachable is not dead: refusing to start is the safe
			// mistake.
			return true, "http://" + addr + "/healthz cannot be reached to check (" + err.Error() + ")", nil
		}
	}
	return true, "it runs elsewhere and serves no HTTP endpoint to check", nil
}

// probeAddr is where the holder's /healthz can be reached from another
// host: a wildcard listen address becomes its host name; ok is false for
// a loopback address, which only its own host reaches.
func probeAddr(h Holder) (string, bool) {
	host, port, err := net.SplitHostPort(h.Listen)
	if err != nil {
		return h.Listen, true
	}
	ip := net.ParseIP(host)
	switch {
	case host == "" || (ip != nil && ip.IsUnspecified()):
		host = h.Host
	case host == "localhost" || (ip != nil && ip.IsLoopback()):
		return "", false
	}
	return net.JoinHostPort(host, port), true
}

// errNotHealthy: something answers at the address, but not a healthy
// gateway.
var errNotHealthy = errors.New("not a healthy gateway")

func probeHealthz(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w (status %d)", errNotHealthy, resp.StatusCode)
	}
	return nil
}

// Lease is a held instance name.
type Lease struct {
	api    API
	holder Holder
	// TookOver is the dead holder this lease replaced, if any.
	TookOver *Holder
}

// Holder is the identity the lease was taken with.
func (l *Lease) Holder() Holder { return l.holder }

// Acquire takes the lease of c.Self.Instance, taking it over from a dead
// holder. It fails with a *HeldError when a live gateway holds it.
func Acquire(ctx context.Context, c *Checker) (*Lease, error) {
	self := c.Self
	if err := CheckName(self.Instance); err != nil {
		return nil, err
	}
	name := VolumeName(self.Instance)
	var tookOver *Holder
	var takeovers []string
	defer func() {
		// Our lease exists (or we gave up): the takeover volumes have
		// done their job.
		for _, t := range takeovers {
			removeVolume(c.API, t)
		}
	}()
	for round := 1; round <= maxRounds; round++ {
		h, err := create(ctx, c.API, name, self, nil)
		if err != nil {
			return nil, fmt.Errorf("take the instance lease (volume %s): %w", name, err)
		}
		if h.Token == self.Token {
			return &Lease{api: c.API, holder: self, TookOver: tookOver}, nil
		}
		alive, why, err := c.Alive(ctx, h)
		if err != nil {
			return nil, fmt.Errorf("instance %q is held by %s, and whether it still runs is unknown: %w", self.Instance, h, err)
		}
		if alive {
			return nil, &HeldError{Holder: h, Why: why}
		}
		tv, won, err := c.takeover(ctx, name, h)
		if err != nil {
			return nil, err
		}
		if won {
			takeovers = append(takeovers, tv)
			dead := h
			tookOver = &dead
			continue // the dead lease is gone: take ours at once
		}
		if err := c.wait(ctx, round); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("take the instance lease (volume %s): still contended after %d rounds", name, maxRounds)
}

func (c *Checker) wait(ctx context.Context, round int) error {
	if c.Wait != nil {
		return c.Wait(ctx, round)
	}
	if c.contended == nil {
		c.contended = retry.Contended()
	}
	if !retry.Sleep(ctx, c.contended.NextBackOff()) {
		return ctx.Err()
	}
	return nil
}

// takeover elects one remover of the dead holder's lease; won is true when
// it is us, and the dead lease is then gone.
func (c *Checker) takeover(ctx context.Context, name string, dead Holder) (string, bool, error) {
	tv := name + "-takeover-" + shortID(dead.Token)
	t, err := create(ctx, c.API, tv, c.Self, map[string]string{labelLease + ".takeover-of": dead.Token})
	if err != nil {
		return "", false, fmt.Errorf("take over the lease of a dead holder (volume %s): %w", tv, err)
	}
	if t.Token != c.Self.Token {
		// Another starter is taking over. If it died halfway, its
		// takeover volume would block every later start: clear it.
		if alive, _, err := c.Alive(ctx, t); err == nil && !alive {
			removeVolume(c.API, tv)
		}
		return "", false, nil
	}
	ictx, cancel := context.WithTimeout(ctx, callTimeout)
	cur, err := c.API.VolumeInspect(ictx, name, client.VolumeInspectOptions{})
	cancel()
	switch {
	case cerrdefs.IsNotFound(err):
	case err != nil:
		removeVolume(c.API, tv)
		return "", false, fmt.Errorf("inspect the instance lease %s: %w", name, err)
	case cur.Volume.Labels[labelToken] == dead.Token:
		rctx, cancel := context.WithTimeout(ctx, callTimeout)
		_, err := c.API.VolumeRemove(rctx, name, client.VolumeRemoveOptions{Force: true})
		cancel()
		if err != nil && !cerrdefs.IsNotFound(err) {
			removeVolume(c.API, tv)
			return "", false, fmt.Errorf("remove the lease of a dead holder (volume %s): %w", name, err)
		}
	}
	return tv, true, nil
}

// create creates the volume name with self's labels, or finds the one that
// exists, and returns the holder its labels name.
func create(ctx context.Context, api API, name string, self Holder, extra map[string]string) (Holder, error) {
	labels := self.labels()
	for k, v := range extra {
		labels[k] = v
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	res, err := api.VolumeCreate(cctx, client.VolumeCreateOptions{Name: name, Labels: labels})
	cancel()
	if err != nil {
		return Holder{}, err
	}
	h, ok := holderFrom(res.Volume.Labels)
	if !ok {
		return Holder{}, fmt.Errorf("%w: volume %s exists and is not a hangar lease; remove or rename it, or choose another --instance name", ErrNotLease, name)
	}
	return h, nil
}

// Release gives the lease up, if it is still ours.
func (l *Lease) Release(ctx context.Context) error {
	name := VolumeName(l.holder.Instance)
	ictx, cancel := context.WithTimeout(ctx, callTimeout)
	cur, err := l.api.VolumeInspect(ictx, name, client.VolumeInspectOptions{})
	cancel()
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("release the instance lease %s: %w", name, err)
	}
	if cur.Volume.Labels[labelToken] != l.holder.Token {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if _, err := l.api.VolumeRemove(rctx, name, client.VolumeRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("release the instance lease %s: %w", name, err)
	}
	return nil
}

func removeVolume(api API, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	_, _ = api.VolumeRemove(ctx, name, client.VolumeRemoveOptions{Force: true})
}

func (h Holder) labels() map[string]string {
	m := map[string]string{
		labelLease:    h.Instance,
		labelToken:    h.Token,
		labelHost:     h.Host,
		labelPID:      strconv.Itoa(h.PID),
		labelPIDStart: strconv.FormatUint(h.PIDStart, 10),
		labelPIDNS:    h.PIDNS,
		labelListen:   h.Listen,
		labelSince:    h.Since.UTC().Format(time.RFC3339),
	}
	if h.Container != "" {
		m[labelContainer] = h.Container
		m[labelCtrName] = h.ContainerName
	}
	return m
}

// holderFrom reads a holder back from labels; ok is false for a volume
// that is not a lease.
func holderFrom(l map[string]string) (Holder, bool) {
	if l[labelLease] == "" || l[labelToken] == "" {
		return Holder{}, false
	}
	h := Holder{
		Instance:      l[labelLease],
		Token:         l[labelToken],
		Host:          l[labelHost],
		PIDNS:         l[labelPIDNS],
		Container:     l[labelContainer],
		ContainerName: l[labelCtrName],
		Listen:        l[labelListen],
	}
	h.PID, _ = strconv.Atoi(l[labelPID])
	h.PIDStart, _ = strconv.ParseUint(l[labelPIDStart], 10, 64)
	h.Since, _ = time.Parse(time.RFC3339, strings.TrimSpace(l[labelSince]))
	return h, true
}
