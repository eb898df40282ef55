package dockerrt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/hostaccess"
)

// API is the part of the Docker Engine client the runtime uses.
type API interface {
	ImageInspect(ctx context.Context, image string, opts ...client.ImageInspectOption) (client.ImageInspectResult, error)
	ContainerCreate(ctx context.Context, opts client.ContainerCreateOptions) (client.ContainerCreateResult, error)
	ContainerAttach(ctx context.Context, id string, opts client.ContainerAttachOptions) (client.ContainerAttachResult, error)
	ContainerStart(ctx context.Context, id string, opts client.ContainerStartOptions) (client.ContainerStartResult, error)
	ContainerWait(ctx context.Context, id string, opts client.ContainerWaitOptions) client.ContainerWaitResult
	ContainerRemove(ctx context.Context, id string, opts client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)
	ContainerInspect(ctx context.Context, id string, opts client.ContainerInspectOptions) (client.ContainerInspectResult, error)
	ContainerList(ctx context.Context, opts client.ContainerListOptions) (client.ContainerListResult, error)
}

var _ API = (*client.Client)(nil)

// Timeouts of short Docker calls; a hung engine must never hang a caller.
const (
	shortCallTimeout = 10 * time.Second
	stopGrace        = 3 * time.Second
	stderrTailBytes  = 16 << 10
)

// ErrImageNotFound is returned when the image is neither on the engine nor
// in its registry.
var ErrImageNotFound = errors.New("image not found")

// Runtime starts and stops provider containers.
type Runtime struct {
	api   API
	owner string
	// replica is this gateway's replica name when replicas of the
	// instance share a store ("" otherwise): its containers carry it and
	// its reaps are limited to them.
	replica string
	log     *slog.Logger
	oom     *oomTracker
	live    *liveSet
	guard   func(context.Context) error
	// access is the operator's allow-list for specs not from the config
	// file, read at each Run so that a reload applies; nil allows nothing.
	access func() hostaccess.Policy
}

// SetReplica makes the Runtime one replica of its instance (see
// LabelReplica). Call it before the first Run or Reap.
func (r *Runtime) SetReplica(name string) { r.replica = name }

// SetAccess makes every Run hold specs not from the config file to the
// policy access returns. Call it before the Runtime is used.
func (r *Runtime) SetAccess(access func() hostaccess.Policy) { r.access = access }

// New returns a Runtime creating containers labelled with owner.
func New(api API, owner string, log *slog.Logger) *Runtime {
	return &Runtime{api: api, owner: owner, log: log, oom: newOOMTracker(), live: newLiveSet()}
}

// SetGuard makes every container creation and every reap first call
// guard, and fail with its error: the gateway passes the check of its
// instance lease, so that nothing of an instance is touched by a gateway
// that does not hold it. Call it before the Runtime is used.
func (r *Runtime) SetGuard(guard func(context.Context) error) { r.guard = guard }

func (r *Runtime) checkGuard(ctx context.Context) error {
	if r.guard == nil {
		return nil
	}
	return r.guard(ctx)
}

// Container is a running provider container.
type Container struct {
	ID string
	// Stdout carries the provider's demultiplexed stdout (stdio providers).
	Stdout io.Reader
	// Stdin writes to the provider's stdin; closing it sends EOF.
	Stdin io.WriteCloser
	// Stderr keeps the last bytes the provider wrote to stderr.
	Stderr *Tail

	rt       *Runtime
	attach   *client.HijackedResponse
	done     chan struct{}
	exitCode int64
	exitErr  string
	oomed    bool
	stopOnce sync.Once
	// foreign containers were started by someone else (discovery): Stop
	// detaches and never removes them.
	foreign bool
	detach  context.CancelFunc
}

// Done is closed once the container has exited and been removed.
func (c *Container) Done() <-chan struct{} { return c.done }

// Exit describes how the container ended, e.g. "exit 137, oom"; it is only
// meaningful after Done is closed.
func (c *Container) Exit() string {
	s := fmt.Sprintf("exit %d", c.exitCode)
	if c.oomed {
		s += ", oom"
	}
	if c.exitErr != "" {
		s += ", " + c.exitErr
	}
	return s
}

// Run creates, attaches and starts a container for spec. Attach comes before
// start so no early output is lost; the wait is registered before start too
// so that even an instant exit is seen.
func (r *Runtime) Run(ctx context.Context, spec Spec) (*Container, error) {
	spec.Owner, spec.Replica = r.owner, r.replica
	spec.Access = hostaccess.Policy{}
	if r.access != nil {
		spec.Access = r.access()
	}
	cfg, host, netCfg, err := Build(spec)
	if err != nil {
		return nil, err
	}
	if err := r.checkGuard(ctx); err != nil {
		return nil, err
	}
	for _, v := range spec.Volumes {
		if spec.FromConfigFile && MountsEngineSocket(v) {
			// Allowed by allow_docker_socket, but worth a line in every start.
			r.log.Warn("provider is given the Docker socket (allow_docker_socket: true)", "server", spec.ServerID, "volume", v)
		}
	}
	if err := r.checkImage(ctx, spec.Image); err != nil {
		return nil, err
	}

	// The reaper must not take the container for an orphan while it is
	// being created (its ID is not known yet) or at any time before it is
	// gone again: the nonce label covers the first, the ID the rest.
	nonce := r.live.begin()
	defer r.live.end(nonce)
	cfg.Labels[LabelCreate] = nonce
	cctx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	created, err := r.api.ContainerCreate(cctx, client.ContainerCreateOptions{
		Config: cfg, HostConfig: host, NetworkingConfig: netCfg,
	})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("create container: %w", err)
	}
	r.live.add(created.ID)
	c := &Container{ID: created.ID, Stderr: NewTail(stderrTailBytes), rt: r, done: make(chan struct{})}

	fail := func(err error) (*Container, error) {
		r.remove(c.ID)
		r.live.drop(c.ID)
		if c.attach != nil {
			c.attach.Close()
		}
		return nil, err
	}

	if err := c.attachStreams(ctx, spec.Stdio, spec.Stdout); err != nil {
		return fail(err)
	}

	// The wait outlives the caller's context: it ends when the container
	// is gone, which Stop and the engine guarantee.
	wait := r.api.ContainerWait(context.WithoutCancel(ctx), c.ID, client.ContainerWaitOptions{Condition: container.WaitConditionRemoved})

	sctx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	_, err = r.api.ContainerStart(sctx, c.ID, client.ContainerStartOptions{})
	cancel()
	if err != nil {
		return fail(fmt.Errorf("start container: %w", err))
	}
	r.oom.track(c.ID)
	go c.awaitExit(wait)
	return c, nil
}

// attachStreams attaches to the container's output (and stdin for stdio
// providers). stdout becomes c.Stdout for stdio providers; otherwise it
// goes to stdout when set, else joins stderr in the tail, which is all the
// gateway wants of it.
func (c *Container) attachStreams(ctx context.Context, stdin bool, stdout io.Writer) error {
	actx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	att, err := c.rt.api.ContainerAttach(actx, c.ID, client.ContainerAttachOptions{
		Stream: true, Stdin: stdin, Stdout: true, Stderr: true,
	})
	cancel()
	if err != nil {
		return fmt.Errorf("attach container: %w", err)
	}
	c.attach = &att.HijackedResponse
	// Tty is off, so the stream is always multiplexed (on API < 1.42 the
	// media type header is empty and cannot tell us).
	if stdin {
		// The provider's client reads its stdout frames straight off the
		// stream, stderr on the way.
		c.Stdout = newStdoutReader(att.Reader, c.Stderr)
		c.Stdin = stdinCloser{att.HijackedResponse}
		return nil
	}
	if stdout == nil {
		stdout = c.Stderr
	}
	go func() { _ = demux(stdout, c.Stderr, att.Reader) }()
	return nil
}

func (c *Container) awaitExit(w client.ContainerWaitResult) {
	select {
	case res := <-w.Result:
		c.exitCode = res.StatusCode
		if res.Error != nil && res.Error.Message != "" {
			c.exitErr = res.Error.Message
		}
	case err := <-w.Error:
		// The engine went away or the container vanished without us
		// seeing the exit; treat it as an exit of unknown status.
		c.exitCode = -1
		c.exitErr = "wait: " + err.Error()
	}
	c.oomed = c.rt.oom.take(c.ID, c.exitCode == 137)
	if c.attach != nil {
		c.attach.Close()
	}
	if !c.foreign {
		c.rt.live.drop(c.ID)
	}
	close(c.done)
}

// Stop ends the container: EOF on stdin first (a well-behaved stdio server
// exits on it), then a forced removal after a short grace. It returns once
// the container is gone or ctx ends.
func (c *Container) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() {
		if c.foreign {
			c.attach.Close()
			c.detach()
			return
		}
		if c.Stdin != nil {
			_ = c.Stdin.Close()
		}
		select {
		case <-c.done:
			return
		case <-time.After(stopGrace):
		case <-ctx.Done():
		}
		c.rt.remove(c.ID)
	})
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop container %s: %w", shortID(c.ID), ctx.Err())
	}
}

// Kill removes the container at once, without the grace Stop gives, and
// waits (until ctx ends) for it to be gone. A foreign container is only
// detached.
func (c *Container) Kill(ctx context.Context) {
	if c.foreign {
		_ = c.Stop(ctx)
		return
	}
	c.stopOnce.Do(func() {
		if c.Stdin != nil {
			_ = c.Stdin.Close()
		}
		c.rt.remove(c.ID)
	})
	select {
	case <-c.done:
	case <-ctx.Done():
	}
}

func (r *Runtime) remove(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), shortCallTimeout)
	defer cancel()
	_, err := r.api.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
	if err != nil && !cerrdefs.IsNotFound(err) && !isRemovalInProgress(err) {
		r.log.Warn("remove container", "container", shortID(id), "error", err)
	}
}

func (r *Runtime) checkImage(ctx context.Context, image string) error {
	ictx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	defer cancel()
	if _, err := r.api.ImageInspect(ictx, image); err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("%w: %s is not on the Docker engine (pull it, or let its pull policy do so)", ErrImageNotFound, image)
		}
		return fmt.Errorf("inspect image %s: %w", image, err)
	}
	return nil
}

func isRemovalInProgress(err error) bool {
	return strings.Contains(err.Error(), "removal of container") && strings.Contains(err.Error(), "in progress")
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// stdinCloser closes only the write half, so the provider sees EOF while
// its last output can still be read.
type stdinCloser struct{ h client.HijackedResponse }

func (s stdinCloser) Write(p []byte) (int, error) { return s.h.Conn.Write(p) }
func (s stdinCloser) Close() error                { return s.h.CloseWrite() }
