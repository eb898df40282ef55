package dockerrt

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// fakeEgressAPI is the engine's network side: networks by name, an event
// stream the test feeds, a version.
type fakeEgressAPI struct {
	mu       sync.Mutex
	nets     map[string]network.Inspect
	created  []client.NetworkCreateOptions
	removed  []string
	api      string
	messages chan events.Message
}

func newFakeEgressAPI() *fakeEgressAPI {
	return &fakeEgressAPI{nets: map[string]network.Inspect{}, api: "1.41", messages: make(chan events.Message)}
}

func (f *fakeEgressAPI) NetworkCreate(_ context.Context, name string, o client.NetworkCreateOptions) (client.NetworkCreateResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.nets[name]; ok {
		return client.NetworkCreateResult{}, cerrdefs.ErrConflict.WithMessage("network with name " + name + " already exists")
	}
	f.created = append(f.created, o)
	nw := network.Inspect{}
	nw.Name, nw.Internal, nw.Options = name, o.Internal, o.Options
	f.nets[name] = nw
	return client.NetworkCreateResult{ID: name}, nil
}

func (f *fakeEgressAPI) NetworkConnect(context.Context, string, client.NetworkConnectOptions) (client.NetworkConnectResult, error) {
	return client.NetworkConnectResult{}, nil
}

func (f *fakeEgressAPI) NetworkRemove(_ context.Context, name string, _ client.NetworkRemoveOptions) (client.NetworkRemoveResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.nets, name)
	f.removed = append(f.removed, name)
	return client.NetworkRemoveResult{}, nil
}

func (f *fakeEgressAPI) NetworkList(context.Context, client.NetworkListOptions) (client.NetworkListResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out client.NetworkListResult
	for _, nw := range f.nets {
		out.Items = append(out.Items, network.Summary{Network: nw.Network})
	}
	return out, nil
}

func (f *fakeEgressAPI) NetworkInspect(_ context.Context, name string, _ client.NetworkInspectOptions) (client.NetworkInspectResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	nw, ok := f.nets[name]
	if !ok {
		return client.NetworkInspectResult{}, cerrdefs.ErrNotFound
	}
	return client.NetworkInspectResult{Network: nw}, nil
}

func (f *fakeEgressAPI) Events(ctx context.Context, _ client.EventsListOptions) client.EventsResult {
	msgs, errs := make(chan events.Message), make(chan error, 1)
	go func() {
		for {
			select {
			case <-ctx.Done():
				errs <- ctx.Err()
				return
			case m := <-f.messages:
				msgs <- m
			}
		}
	}()
	return client.EventsResult{Messages: msgs, Err: errs}
}

func (f *fakeEgressAPI) ServerVersion(context.Context, client.ServerVersionOptions) (client.ServerVersionResult, error) {
	return client.ServerVersionResult{Version: "x", APIVersion: f.api}, nil
}

// addNetwork puts a network with subnet on the fake engine.
func (f *fakeEgressAPI) addNetwork(name, subnet string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	nw := network.Inspect{}
	nw.Name = name
	nw.IPAM.Config = []network.IPAMConfig{{Subnet: netip.MustParsePrefix(subnet)}}
	f.nets[name] = nw
}

func newTestEgress(api *fakeEgressAPI) *Egress {
	rt := New(nil, "inst", slog.New(slog.DiscardHandler))
	return NewEgress(rt, api, "img", "", nil)
}

// TestEgressNetworkIsolated: the internal network is made without a host
// address (inhibit_ipv4); one left without it by an older gateway is
// replaced, not reused.
func TestEgressNetworkIsolated(t *testing.T) {
	t.Parallel()
	api := newFakeEgressAPI()
	e := newTestEgress(api)
	defer e.Close()
	n := &egressNet{server: "kit", name: "hangar-egress-inst-kit-1"}
	if err := e.createNetwork(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	if o := api.created[0]; !o.Internal || o.Options[inhibitIPv4] != "true" {
		t.Errorf("created %+v, want internal with %s", o, inhibitIPv4)
	}
	// An earlier run's isolated network is taken as it is.
	if err := e.createNetwork(t.Context(), n); err != nil || len(api.removed) != 0 {
		t.Errorf("reusing an isolated network: %v, removed %v", err, api.removed)
	}
	// One an older gateway made (internal, with the host on it) goes.
	old := network.Inspect{}
	old.Name, old.Internal = "hangar-egress-inst-kit-2", true
	api.nets[old.Name] = old
	if err := e.createNetwork(t.Context(), &egressNet{server: "kit", name: old.Name}); err != nil {
		t.Fatal(err)
	}
	if len(api.removed) != 1 || api.nets[old.Name].Options[inhibitIPv4] != "true" {
		t.Errorf("the older network was not replaced: removed %v, now %+v", api.removed, api.nets[old.Name])
	}
}

// TestEgressNeedsEngine2010: an engine older than API 1.41 ignores
// inhibit_ipv4, so egress is refused there with a clear error.
func TestEgressNeedsEngine2010(t *testing.T) {
	t.Parallel()
	api := newFakeEgressAPI()
	api.api = "1.40"
	e := newTestEgress(api)
	defer e.Close()
	err := e.setUp(t.Context(), &egressNet{server: "kit", name: "n"})
	if !errors.Is(err, ErrEgressEngine) || !strings.Contains(err.Error(), "API 1.40") {
		t.Fatalf("setUp on API 1.40: %v", err)
	}
	if len(api.created) != 0 {
		t.Error("a network was created on an engine that cannot isolate it")
	}
}

// pipeStdin records what is written to a proxy's stdin.
type pipeStdin struct {
	mu    sync.Mutex
	lines []string
}

func (p *pipeStdin) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines = append(p.lines, string(b))
	return len(b), nil
}
func (p *pipeStdin) Close() error { return nil }

func (p *pipeStdin) last() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.lines) == 0 {
		return ""
	}
	return p.lines[len(p.lines)-1]
}

// TestEgressTellsProxiesOfNewNetworks: a network created after a proxy
// started reaches the proxy as a Control line on its stdin.
func TestEgressTellsProxiesOfNewNetworks(t *testing.T) {
	t.Parallel()
	api := newFakeEgressAPI()
	api.addNetwork("bridge", "172.17.0.0/16")
	e := newTestEgress(api)
	defer e.Close()
	stdin := &pipeStdin{}
	n := &egressNet{server: "kit", name: "n", refs: 1, proxy: &Container{Stdin: stdin}}
	e.mu.Lock()
	e.nets[n.name] = n
	e.mu.Unlock()
	e.watchOnce.Do(func() {
		e.wg.Add(1)
		go e.watchNetworks()
	})
	waitFor(t, "the first listing told", func() bool { return strings.Contains(stdin.last(), "172.17.0.0/16") })
	api.addNetwork("public-pool", "11.0.0.0/24")
	api.messages <- events.Message{Type: events.NetworkEventType, Action: events.ActionCreate}
	waitFor(t, "the new network told", func() bool { return strings.Contains(stdin.last(), "11.0.0.0/24") })
	if l := stdin.last(); !strings.HasPrefix(l, `{"forbid":[`) || !strings.HasSuffix(l, "\n") {
		t.Errorf("control line %q", l)
	}
}

// TestBuildEgressProviderHasNoIPv6: a provider on its egress network gets
// IPv6 turned off, so the bridge's link-local address is no way to the
// host.
func TestBuildEgressProviderHasNoIPv6(t *testing.T) {
	t.Parallel()
	_, host, _, err := Build(Spec{ServerID: "kit", Image: "img", Network: "hangar-egress-x", EgressNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	if host.Sysctls["net.ipv6.conf.all.disable_ipv6"] != "1" || host.Sysctls["net.ipv6.conf.default.disable_ipv6"] != "1" {
		t.Errorf("sysctls %v", host.Sysctls)
	}
	_, host, _, _ = Build(Spec{ServerID: "kit", Image: "img", Network: "net", FromConfigFile: true})
	if len(host.Sysctls) != 0 {
		t.Errorf("a provider without egress got sysctls %v", host.Sysctls)
	}
}
