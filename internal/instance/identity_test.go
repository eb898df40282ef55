package instance

import (
	"context"
	"slices"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

type inspectOnly map[string]container.InspectResponse

func (m inspectOnly) ContainerInspect(_ context.Context, id string, _ client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	r, ok := m[id]
	if !ok {
		return client.ContainerInspectResult{}, cerrdefs.ErrNotFound
	}
	return client.ContainerInspectResult{Container: r}, nil
}

func TestDetect(t *testing.T) {
	t.Parallel()
	compose := container.InspectResponse{ID: "abc123def4567890", Name: "/stack-hangar-1",
		Config:          &container.Config{Hostname: "abc123def456", Labels: map[string]string{LabelComposeProject: "stack"}},
		NetworkSettings: &container.NetworkSettings{Networks: map[string]*network.EndpointSettings{"stack_default": {}, "b": {}}}}
	namedLikeHost := container.InspectResponse{ID: "ffff", Name: "/vm", Config: &container.Config{Hostname: "ffff00000000"}}
	api := inspectOnly{"abc123def456": compose, "vm": namedLikeHost}
	tests := []struct {
		host   string
		ok     bool
		want   Container
		reason string
	}{
		{"abc123def456", true, Container{ID: "abc123def4567890", Name: "stack-hangar-1", ComposeProject: "stack", Networks: []string{"b", "stack_default"}}, "our compose container"},
		{"vm", false, Container{}, "a container merely named like the host"},
		{"laptop", false, Container{}, "no such container: a host"},
		{"", false, Container{}, "no hostname"},
	}
	for _, tt := range tests {
		got, ok := Detect(t.Context(), api, tt.host)
		if ok != tt.ok || got.ID != tt.want.ID || got.Name != tt.want.Name || got.ComposeProject != tt.want.ComposeProject || !slices.Equal(got.Networks, tt.want.Networks) {
			t.Errorf("%s: Detect(%q) = %+v, %v; want %+v, %v", tt.reason, tt.host, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSelfIsAliveToItself(t *testing.T) {
	t.Parallel()
	self := Self("x", Container{}, "127.0.0.1:8080")
	if self.PIDNS == "" || self.PIDStart == 0 {
		t.Fatalf("no PID namespace or start time from /proc: %+v", self)
	}
	other := Self("x", Container{}, "")
	c := &Checker{Self: other}
	alive, why, err := c.Alive(t.Context(), self)
	if err != nil || !alive {
		t.Errorf("a running process is not alive to a peer in its namespace: %v %q %v", alive, why, err)
	}
	dead := self
	dead.PIDStart++
	if alive, _, _ := c.Alive(t.Context(), dead); alive {
		t.Error("a process with another start time counts as alive")
	}
	if s := self.String(); !strings.Contains(s, "listening on 127.0.0.1:8080") {
		t.Errorf("String() = %q", s)
	}
}
