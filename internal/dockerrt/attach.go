package dockerrt

import (
	"context"
	"fmt"
	"sort"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// Attach connects to a running container that someone else started with an
// open stdin (a discovered stdio provider). The gateway does not own it:
// Stop only detaches, and the container keeps running.
func (r *Runtime) Attach(ctx context.Context, id string) (*Container, error) {
	ictx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	info, err := r.api.ContainerInspect(ictx, id, client.ContainerInspectOptions{})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("inspect container %s: %w", shortID(id), err)
	}
	ct := info.Container
	if ct.State == nil || !ct.State.Running {
		return nil, fmt.Errorf("container %s is not running", shortID(id))
	}
	if ct.Config == nil || !ct.Config.OpenStdin {
		return nil, fmt.Errorf("container %s was not started with an open stdin (stdin_open: true)", shortID(id))
	}
	c := &Container{ID: id, Stderr: NewTail(stderrTailBytes), rt: r, done: make(chan struct{}), foreign: true}
	if err := c.attachStreams(ctx, true, nil); err != nil {
		return nil, err
	}
	wctx, detach := context.WithCancel(context.WithoutCancel(ctx))
	c.detach = detach
	wait := r.api.ContainerWait(wctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	go c.awaitExit(wait)
	return c, nil
}

// Address returns the container's IP on network, or when network is "" on
// the first of its networks by name.
func (r *Runtime) Address(ctx context.Context, id, network string) (string, error) {
	ictx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	info, err := r.api.ContainerInspect(ictx, id, client.ContainerInspectOptions{})
	cancel()
	if err != nil {
		return "", fmt.Errorf("inspect container %s: %w", shortID(id), err)
	}
	ns := info.Container.NetworkSettings
	if ns == nil || len(ns.Networks) == 0 {
		return "", fmt.Errorf("container %s has no network", shortID(id))
	}
	names := make([]string, 0, len(ns.Networks))
	for n := range ns.Networks {
		names = append(names, n)
	}
	sort.Strings(names)
	if network != "" {
		names = []string{network}
	}
	for _, n := range names {
		if ep := ns.Networks[n]; ep != nil && ep.IPAddress.IsValid() {
			return ep.IPAddress.String(), nil
		}
	}
	return "", fmt.Errorf("container %s has no IP address on %v", shortID(id), names)
}
