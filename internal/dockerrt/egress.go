package dockerrt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/moby/moby/client/pkg/versions"

	"github.com/mcp-hangar/hangar/internal/egress"
	"github.com/mcp-hangar/hangar/internal/retry"
)

// EgressAPI is the part of the engine client the egress networks need.
type EgressAPI interface {
	NetworkCreate(ctx context.Context, name string, opts client.NetworkCreateOptions) (client.NetworkCreateResult, error)
	NetworkConnect(ctx context.Context, network string, opts client.NetworkConnectOptions) (client.NetworkConnectResult, error)
	NetworkRemove(ctx context.Context, network string, opts client.NetworkRemoveOptions) (client.NetworkRemoveResult, error)
	NetworkList(ctx context.Context, opts client.NetworkListOptions) (client.NetworkListResult, error)
	NetworkInspect(ctx context.Context, network string, opts client.NetworkInspectOptions) (client.NetworkInspectResult, error)
	Events(ctx context.Context, opts client.EventsListOptions) client.EventsResult
	ServerVersion(ctx context.Context, opts client.ServerVersionOptions) (client.ServerVersionResult, error)
}

var _ EgressAPI = (*client.Client)(nil)

// ProxyAlias is the proxy's name on an egress network: providers reach it
// as http://egress-proxy:3128 whatever container currently serves it.
const ProxyAlias = "egress-proxy"

// Limits of a proxy container: it copies bytes, it needs little.
const (
	proxyMemoryBytes = 64 << 20
	proxyNanoCPUs    = 500_000_000
	proxyReadyWait   = 15 * time.Second
)

// Egress gives servers with an egress allow-list their internal network
// and its proxy: one network and one proxy container per server and
// allow-list, shared by that server's containers, started on first use,
// restarted when it dies, removed when the last container using it is
// gone. The proxy knows whose traffic it carries because it carries only
// that server's.
type Egress struct {
	rt  *Runtime
	api EgressAPI
	// Image runs `hangar egress-proxy`; OutNetwork is where proxies reach
	// out ("" for the default bridge).
	image, outNet string
	log           *slog.Logger
	// refused is told of every refusal a proxy reports.
	refused func(server string, r egress.Refusal)

	mu     sync.Mutex
	nets   map[string]*egressNet // by network name
	closed bool
	wg     sync.WaitGroup

	// life ends with Close; it bounds the watch of the engine's networks,
	// started with the first proxy (watchOnce).
	life      context.Context
	endLife   context.CancelFunc
	watchOnce sync.Once
	// engine are the engine's subnets as last listed by the watch; nil
	// before its first listing. Every proxy is told them as they change.
	engineMu     sync.Mutex
	engine       []netip.Prefix
	engineListed bool
	// checked is the engine's verdict on egress isolation (checkEngine),
	// asked once.
	checked func() error
}

// NewEgress returns the egress networks of rt's instance. refused is called
// (from the proxy's output reader) for every refused connection.
func NewEgress(rt *Runtime, api EgressAPI, image, outNetwork string, refused func(server string, r egress.Refusal)) *Egress {
	if outNetwork == "" {
		outNetwork = "bridge"
	}
	life, end := context.WithCancel(context.Background())
	e := &Egress{rt: rt, api: api, image: image, outNet: outNetwork, log: rt.log.With("component", "egress"),
		refused: refused, nets: map[string]*egressNet{}, life: life, endLife: end}
	e.checked = sync.OnceValue(e.checkEngine)
	return e
}

// egressNet is one server's network and proxy.
type egressNet struct {
	server string
	name   string
	allow  []string
	refs   int
	ready  chan struct{} // closed once set-up ended; err says how
	err    error
	stop   chan struct{} // closed (by halt) when the last user is gone
	halted sync.Once
	// gone is closed once the proxy and network are removed.
	gone     chan struct{}
	goneOnce sync.Once
	mu       sync.Mutex
	proxy    *Container
	restarts int
	// told is the engine ranges the proxy was last told (tell).
	told []netip.Prefix
}

func (n *egressNet) halt() { n.halted.Do(func() { close(n.stop) }) }

// EgressLease is a server container's place behind the proxy.
type EgressLease struct {
	// Network is the internal network the provider joins.
	Network string
	// Env points the provider at its proxy (both spellings, as clients
	// differ in which they read).
	Env     map[string]string
	release func()
	once    sync.Once
}

// Release gives the network back; the last release removes the proxy and
// the network. Call it once the provider's container is gone.
func (l *EgressLease) Release() {
	if l != nil {
		l.once.Do(l.release)
	}
}

// ProxyEnv is the environment that sends a provider's HTTP clients to its
// proxy; NO_PROXY keeps the provider's own loopback direct.
func ProxyEnv() map[string]string {
	proxy := "http://" + ProxyAlias + ":" + strconv.Itoa(egress.Port)
	noProxy := "localhost,127.0.0.1,::1"
	return map[string]string{
		"HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "NO_PROXY": noProxy,
		"http_proxy": proxy, "https_proxy": proxy, "no_proxy": noProxy,
	}
}

// NetworkName is the egress network of server under owner with allow: a
// new allow-list is a new network and proxy, so a config change never
// hands an old container a new list or a new container an old one.
func NetworkName(owner, server string, allow []string) string {
	h := sha256.Sum256([]byte(strings.Join(allow, "\n")))
	return "hangar-egress-" + owner + "-" + server + "-" + hex.EncodeToString(h[:4])
}

// Acquire returns the network a container of server joins, with its proxy
// running and ready; it sets them up on first use.
func (e *Egress) Acquire(ctx context.Context, server string, allow []string) (*EgressLease, error) {
	name := NetworkName(e.rt.owner, server, allow)
	var n *egressNet
	found := false
	for {
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			return nil, errors.New("egress: the gateway is shutting down")
		}
		n, found = e.nets[name]
		if found && n.refs == 0 {
			// Its last user left and it is being torn down: the same
			// name must not be set up again before it is gone.
			e.mu.Unlock()
			select {
			case <-n.gone:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if !found {
			n = &egressNet{server: server, name: name, allow: allow,
				ready: make(chan struct{}), stop: make(chan struct{}), gone: make(chan struct{})}
			e.nets[name] = n
		}
		n.refs++
		e.mu.Unlock()
		break
	}

	if !found {
		n.err = e.setUp(ctx, n)
		if n.err == nil {
			e.mu.Lock()
			if e.closed {
				n.err = errors.New("egress: the gateway is shutting down")
			} else {
				e.wg.Add(1)
				go e.supervise(n)
			}
			e.mu.Unlock()
			if n.err != nil {
				n.proxy.Kill(context.WithoutCancel(ctx))
				e.removeNetwork(n.name)
			}
		}
		close(n.ready)
	}
	select {
	case <-n.ready:
	case <-ctx.Done():
		e.release(n)
		return nil, ctx.Err()
	}
	if n.err != nil {
		e.release(n)
		return nil, n.err
	}
	l := &EgressLease{Network: name, Env: ProxyEnv()}
	l.release = func() { e.release(n) }
	return l, nil
}

// release drops a reference; the last one halts the proxy, whose
// supervisor removes it and the network and then forgets n.
func (e *Egress) release(n *egressNet) {
	e.mu.Lock()
	n.refs--
	last := n.refs == 0
	e.mu.Unlock()
	if !last {
		return
	}
	// The last user is past set-up (the one that ran it holds a
	// reference until then).
	<-n.ready
	if n.err == nil {
		n.halt()
		return
	}
	// A failed set-up has cleaned up already.
	e.forget(n)
}

// forget drops n once nothing of it is left on the engine.
func (e *Egress) forget(n *egressNet) {
	e.mu.Lock()
	if e.nets[n.name] == n {
		delete(e.nets, n.name)
	}
	e.mu.Unlock()
	n.goneOnce.Do(func() { close(n.gone) })
}

// setUp creates the network and starts the first proxy.
func (e *Egress) setUp(ctx context.Context, n *egressNet) error {
	if err := e.checked(); err != nil {
		return err
	}
	if err := e.createNetwork(ctx, n); err != nil {
		return err
	}
	if err := e.startProxy(ctx, n); err != nil {
		e.removeNetwork(n.name)
		return err
	}
	return nil
}

// The internal network's options. The bridge gets no IPv4 address
// (inhibit_ipv4): without one the host has no address on the network, so
// a provider reaches nothing of the host (its default route points at a
// gateway address nobody answers ARP for) and nothing beyond it, the
// other containers of its network (its proxy) aside. Internal keeps the
// engine from adding a route or NAT out.
const inhibitIPv4 = "com.docker.network.bridge.inhibit_ipv4"

func (e *Egress) createNetwork(ctx context.Context, n *egressNet) error {
	if err := e.rt.checkGuard(ctx); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, shortCallTimeout)
		_, err := e.api.NetworkCreate(cctx, n.name, client.NetworkCreateOptions{
			Driver:   "bridge",
			Internal: true, // no route out: the proxy is the only way
			Options:  map[string]string{inhibitIPv4: "true"},
			Labels: map[string]string{
				LabelManaged: "true", LabelOwner: e.rt.owner, LabelServer: n.server, LabelRole: RoleEgressNetwork,
			},
		})
		cancel()
		if err == nil {
			return nil
		}
		if !cerrdefs.IsConflict(err) && !strings.Contains(err.Error(), "already exists") {
			return fmt.Errorf("egress network for %s: %w", n.server, err)
		}
		// Left by an earlier run of this instance (the name holds the
		// owner): same server, same list, so it is what we want, if it
		// is as isolated as this gateway makes them (an older one may
		// have the host on it).
		ok, ierr := e.isolated(ctx, n.name)
		if ierr != nil {
			return fmt.Errorf("egress network for %s: %w", n.server, ierr)
		}
		if ok {
			return nil
		}
		if attempt > 0 {
			return fmt.Errorf("egress network for %s: %s exists without host isolation and cannot be replaced", n.server, n.name)
		}
		e.log.Warn("egress network without host isolation (left by an older gateway); replacing it", "network", n.name)
		e.removeNetwork(n.name)
	}
}

// isolated reports whether the network name is internal and has no host
// address (inhibitIPv4).
func (e *Egress) isolated(ctx context.Context, name string) (bool, error) {
	ictx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	defer cancel()
	res, err := e.api.NetworkInspect(ictx, name, client.NetworkInspectOptions{})
	if err != nil {
		return false, fmt.Errorf("inspect %s: %w", name, err)
	}
	nw := res.Network
	return nw.Internal && nw.Options[inhibitIPv4] == "true", nil
}

// minEgressAPI is the engine API that knows inhibit_ipv4 (Docker 20.10):
// an older engine ignores the option and leaves the host on the network.
const minEgressAPI = "1.41"

// ErrEgressEngine refuses egress on an engine that cannot isolate it.
var ErrEgressEngine = errors.New("egress needs Docker Engine 20.10 (API 1.41) or later")

// checkEngine refuses egress networks on an engine too old to keep the
// host off them.
func (e *Egress) checkEngine() error {
	ctx, cancel := context.WithTimeout(e.life, shortCallTimeout)
	defer cancel()
	v, err := e.api.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return fmt.Errorf("egress: engine version: %w", err)
	}
	if versions.LessThan(v.APIVersion, minEgressAPI) {
		return fmt.Errorf("%w: this engine is %s (API %s), whose networks cannot keep the host from the provider", ErrEgressEngine, v.Version, v.APIVersion)
	}
	return nil
}

func (e *Egress) removeNetwork(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), shortCallTimeout)
	defer cancel()
	if _, err := e.api.NetworkRemove(ctx, name, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
		e.log.Warn("egress network not removed", "network", name, "error", err)
	}
}

// startProxy runs a proxy for n: created on the way-out network, then
// joined to the internal one under ProxyAlias, and ready once it says so.
func (e *Egress) startProxy(ctx context.Context, n *egressNet) error {
	forbidden, err := e.engineSubnets(ctx)
	if err != nil {
		return err
	}
	clients, err := e.subnetsOf(ctx, n.name)
	if err != nil {
		return err
	}
	e.watchOnce.Do(func() {
		e.wg.Add(1)
		go e.watchNetworks()
	})
	ready := make(chan struct{})
	var readyOnce sync.Once
	lines := &eventLines{on: func(ev egress.Event) {
		switch ev.Event {
		case egress.EventReady:
			readyOnce.Do(func() { close(ready) })
		case egress.EventRefused:
			if e.refused != nil {
				e.refused(n.server, ev.Refusal)
			}
		}
	}}
	c, err := e.rt.Run(ctx, Spec{
		ServerID: n.server,
		Role:     RoleEgressProxy,
		Image:    e.image,
		Args: append([]string{"egress-proxy"},
			egress.Config{Allow: n.allow, Forbidden: forbidden, Clients: clients, Control: true}.Args()...),
		Network:     e.outNet,
		ReadOnly:    true,
		MemoryBytes: proxyMemoryBytes,
		NanoCPUs:    proxyNanoCPUs,
		// Its stdin is the gateway's: the engine's networks as they
		// change (tell), and EOF when the gateway is gone.
		Stdio: true,
		// The proxy is the gateway's own, on the way-out network the
		// operator's config names (egress_proxy.network).
		FromConfigFile: true,
	})
	if err != nil {
		return fmt.Errorf("egress proxy for %s: %w", n.server, err)
	}
	go func() { _, _ = io.Copy(lines, c.Stdout) }()
	fail := func(err error) error {
		c.Kill(context.WithoutCancel(ctx))
		return fmt.Errorf("egress proxy for %s: %w", n.server, err)
	}
	cctx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	_, err = e.api.NetworkConnect(cctx, n.name, client.NetworkConnectOptions{
		Container: c.ID, EndpointConfig: &network.EndpointSettings{Aliases: []string{ProxyAlias}},
	})
	cancel()
	if err != nil {
		return fail(fmt.Errorf("join %s: %w", n.name, err))
	}
	t := time.NewTimer(proxyReadyWait)
	defer t.Stop()
	select {
	case <-ready:
	case <-c.Done():
		return fail(fmt.Errorf("exited at start (%s): %s", c.Exit(), c.Stderr.LastLines(5)))
	case <-t.C:
		return fail(errors.New("not ready in time"))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	n.mu.Lock()
	n.proxy, n.told = c, forbidden
	n.mu.Unlock()
	// Networks created since its arguments were written.
	if now, ok := e.engineNow(); ok {
		e.tell(n, now)
	}
	e.log.Info("egress proxy ready", "server", n.server, "container", shortID(c.ID), "network", n.name)
	return nil
}

// engineSubnets are the engine's networks, which names may not resolve to:
// the gateway, other providers and compose services are reached only by
// an address rule naming them.
func (e *Egress) engineSubnets(ctx context.Context) ([]netip.Prefix, error) {
	lctx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	defer cancel()
	list, err := e.api.NetworkList(lctx, client.NetworkListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list engine networks: %w", err)
	}
	var out []netip.Prefix
	for _, nw := range list.Items {
		for _, c := range nw.IPAM.Config {
			if c.Subnet.IsValid() {
				out = append(out, c.Subnet.Masked())
			}
		}
	}
	// In one order, so that a listing that did not change compares equal.
	slices.SortFunc(out, func(a, b netip.Prefix) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(out), nil
}

// subnetsOf are the ranges of the network name: the proxy serves only
// them.
func (e *Egress) subnetsOf(ctx context.Context, name string) ([]netip.Prefix, error) {
	ictx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	defer cancel()
	res, err := e.api.NetworkInspect(ictx, name, client.NetworkInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("inspect egress network %s: %w", name, err)
	}
	var out []netip.Prefix
	for _, c := range res.Network.IPAM.Config {
		if c.Subnet.IsValid() {
			out = append(out, c.Subnet.Masked())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("egress network %s has no subnet", name)
	}
	return out, nil
}

// supervise restarts n's proxy whenever it dies until n is halted, then
// removes the proxy and the network.
func (e *Egress) supervise(n *egressNet) {
	defer e.wg.Done()
	defer e.forget(n)
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 100 * time.Millisecond
	b.MaxInterval = 5 * time.Second
	for {
		n.mu.Lock()
		c := n.proxy
		n.mu.Unlock()
		if c != nil {
			select {
			case <-n.stop:
				ctx, cancel := context.WithTimeout(context.Background(), shortCallTimeout)
				c.Kill(ctx)
				cancel()
				e.removeNetwork(n.name)
				return
			case <-c.Done():
				e.log.Warn("egress proxy exited; restarting it", "server", n.server, "exit", c.Exit())
				n.mu.Lock()
				n.proxy = nil
				n.restarts++
				n.mu.Unlock()
			}
		}
		t := time.NewTimer(b.NextBackOff())
		select {
		case <-n.stop:
			t.Stop()
			e.removeNetwork(n.name)
			return
		case <-t.C:
		}
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			select {
			case <-n.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := e.startProxy(ctx, n)
		cancel()
		<-stopped
		if err != nil {
			e.log.Warn("egress proxy not restarted; retrying", "server", n.server, "error", err)
			continue
		}
		b.Reset()
	}
}

// watchNetworks keeps the engine's subnets current and every proxy told
// of them, until Close: a name must not resolve into a network created
// after a proxy started (one in a public range: the guard refuses every
// private one anyway). It subscribes to network events first and lists
// after, so nothing created in between is missed.
func (e *Egress) watchNetworks() {
	defer e.wg.Done()
	wait := retry.Reconnect()
	for e.life.Err() == nil {
		ctx, cancel := context.WithCancel(e.life)
		res := e.api.Events(ctx, client.EventsListOptions{Filters: make(client.Filters).
			Add("type", string(events.NetworkEventType)).
			Add("event", string(events.ActionCreate), string(events.ActionDestroy))})
		err := e.relist(ctx)
		if err == nil {
			wait.Reset()
			err = e.followNetworks(ctx, res)
		}
		cancel()
		if e.life.Err() != nil {
			return
		}
		d := wait.NextBackOff()
		e.log.Warn("engine networks not followed; retrying", "error", err, "retry_in", d)
		if !retry.Sleep(e.life, d) {
			return
		}
	}
}

func (e *Egress) followNetworks(ctx context.Context, res client.EventsResult) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-res.Err:
			return fmt.Errorf("network events: %w", err)
		case <-res.Messages:
			if err := e.relist(ctx); err != nil {
				return err
			}
		}
	}
}

// relist lists the engine's subnets and tells every proxy when they
// changed.
func (e *Egress) relist(ctx context.Context) error {
	subnets, err := e.engineSubnets(ctx)
	if err != nil {
		return err
	}
	e.engineMu.Lock()
	changed := !e.engineListed || !slices.Equal(e.engine, subnets)
	e.engine, e.engineListed = subnets, true
	e.engineMu.Unlock()
	if !changed {
		return nil
	}
	e.mu.Lock()
	nets := make([]*egressNet, 0, len(e.nets))
	for _, n := range e.nets {
		nets = append(nets, n)
	}
	e.mu.Unlock()
	for _, n := range nets {
		e.tell(n, subnets)
	}
	return nil
}

// engineNow is the watch's latest listing; false before its first.
func (e *Egress) engineNow() ([]netip.Prefix, bool) {
	e.engineMu.Lock()
	defer e.engineMu.Unlock()
	return e.engine, e.engineListed
}

// tell writes subnets to n's proxy as a Control line, unless it knows
// them already. A proxy being restarted is told when it is ready.
func (e *Egress) tell(n *egressNet, subnets []netip.Prefix) {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := n.proxy
	if c == nil || c.Stdin == nil || slices.Equal(n.told, subnets) {
		return
	}
	line, err := json.Marshal(egress.Control{Forbid: subnets})
	if err != nil {
		return
	}
	if _, err := c.Stdin.Write(append(line, '\n')); err != nil {
		e.log.Warn("egress proxy not told of the engine's networks", "server", n.server, "error", err)
		return
	}
	n.told = subnets
	e.log.Debug("egress proxy told of the engine's networks", "server", n.server, "ranges", len(subnets))
}

// EgressStatus is what runs for a server behind its proxy.
type EgressStatus struct {
	Network string
	// ProxyContainer is "" while the proxy is being (re)started.
	ProxyContainer string
	// Restarts counts proxies that died and were replaced.
	Restarts int
}

// Status reports server's egress network and proxy; ok is false when none
// is running.
func (e *Egress) Status(server string) (EgressStatus, bool) {
	e.mu.Lock()
	var n *egressNet
	for _, x := range e.nets {
		if x.server == server && x.refs > 0 {
			n = x
		}
	}
	e.mu.Unlock()
	if n == nil {
		return EgressStatus{}, false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	st := EgressStatus{Network: n.name, Restarts: n.restarts}
	if n.proxy != nil {
		st.ProxyContainer = shortID(n.proxy.ID)
	}
	return st, true
}

// Close stops every proxy and removes the networks nothing uses any more;
// nothing is restarted after it.
func (e *Egress) Close() {
	e.endLife()
	e.mu.Lock()
	e.closed = true
	nets := e.nets
	e.nets = map[string]*egressNet{}
	e.mu.Unlock()
	for _, n := range nets {
		// One still being set up sees closed and cleans up itself.
		select {
		case <-n.ready:
			if n.err == nil {
				n.halt()
			}
		default:
		}
	}
	e.wg.Wait()
}

// Reap removes this instance's egress networks that no server uses: those
// left by an earlier run, or whose last user went while the engine was
// away. A network still holding a container is left for the next reap.
func (e *Egress) Reap(ctx context.Context) (int, error) {
	if err := e.rt.checkGuard(ctx); err != nil {
		return 0, err
	}
	lctx, cancel := context.WithTimeout(ctx, shortCallTimeout)
	list, err := e.api.NetworkList(lctx, client.NetworkListOptions{Filters: e.rt.ownFilter().Add("label", LabelRole+"="+RoleEgressNetwork)})
	cancel()
	if err != nil {
		return 0, fmt.Errorf("list egress networks: %w", err)
	}
	n := 0
	for _, nw := range list.Items {
		e.mu.Lock()
		_, used := e.nets[nw.Name]
		e.mu.Unlock()
		if used {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, shortCallTimeout)
		_, err := e.api.NetworkRemove(rctx, nw.ID, client.NetworkRemoveOptions{})
		cancel()
		if err != nil {
			e.log.Debug("egress network not reaped yet", "network", nw.Name, "error", err)
			continue
		}
		n++
	}
	return n, nil
}

// eventLines splits a proxy's stdout into lines and hands on its events;
// anything else is dropped (the proxy logs to stderr).
type eventLines struct {
	on  func(egress.Event)
	buf []byte
}

const maxEventLine = 4 << 10

func (w *eventLines) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		if ev, ok := egress.ParseEvent(w.buf[:i]); ok {
			w.on(ev)
		}
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > maxEventLine {
		w.buf = w.buf[:0] // no event is this long
	}
	return len(p), nil
}
