package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	mcpclient "github.com/mark3labs/mcp-go/client"

	"github.com/mcp-hangar/hangar/internal/manage"
	"github.com/mcp-hangar/hangar/internal/store"
	"github.com/mcp-hangar/hangar/internal/store/pgtest"
)

// Figure 13: gateway replicas of one instance on a shared PostgreSQL
// store (issue 21). Every figure here comes from one PostgreSQL cluster
// started for the run (Debian's packages, fsync on) and bin/hangar
// replicas on loopback.

// ReplicasResult is figure 13.
type ReplicasResult struct {
	// Store write latency: one decision written (a transaction), by the
	// embedded SQLite store and by the PostgreSQL one.
	SQLiteWrite, PostgresWrite Summary
	// 32 clients calling a provider tool by its callable name on
	// 2026-07-28 (stateless: any replica serves any request), through one
	// replica and through two (half the clients on each, as a round-robin
	// balancer spreads them).
	One, Two ThroughputResult
	// Propagation is the time from a change's answer on one replica to its
	// effect on the other (mcp/install and mcp/uninstall through r1, seen
	// in r2's mcp/list).
	Propagation Summary
	// A 2025-11-25 session's call on the replica that holds the session,
	// and on the other one, which forwards it.
	Owner, Forwarded Summary
}

// ThroughputResult is one load run.
type ThroughputResult struct {
	Calls  int
	PerSec float64
	Lat    Summary
}

// Replicas measures figure 13.
func (b *Bench) Replicas(ctx context.Context) (*ReplicasResult, error) {
	pg, err := pgtest.Start(true)
	if err != nil {
		return nil, fmt.Errorf("postgresql for the replicas (apt-get install postgresql): %w", err)
	}
	defer pg.Remove()
	res := &ReplicasResult{}
	if res.SQLiteWrite, res.PostgresWrite, err = b.storeWrites(ctx, pg); err != nil {
		return nil, err
	}

	instance := b.Owner("replicas")
	yaml := configYAML([]srvDef{{"math", mathImage}},
		fmt.Sprintf("store:\n  url: %q\n  password_file: %q\n", pg.URL(pgtest.Database), pg.PasswordFile))
	r1, err := b.startReplica(instance, "r1", yaml)
	if err != nil {
		return nil, err
	}
	r2, err := b.startReplica(instance, "r2", yaml)
	if err != nil {
		return nil, err
	}
	for _, g := range []*Gateway{r1, r2} {
		c, err := Dial(ctx, g.MCPURL)
		if err != nil {
			return nil, err
		}
		_, err = c.MustCall(ctx, "hangar_warm", map[string]any{"mcp_servers": "math"})
		c.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", g.Name, err)
		}
	}
	perClient := b.n(150, 30)
	if res.One, err = b.loadReplicas(ctx, []*Gateway{r1}, perClient); err != nil {
		return nil, err
	}
	if res.Two, err = b.loadReplicas(ctx, []*Gateway{r1, r2}, perClient); err != nil {
		return nil, err
	}
	if res.Propagation, err = b.propagation(ctx, r1, r2); err != nil {
		return nil, err
	}
	if res.Owner, res.Forwarded, err = b.forwarding(ctx, r1, r2); err != nil {
		return nil, err
	}
	return res, nil
}

// startReplica runs a replica of instance named name. The replicas of an
// instance share its keystore key, given as docs/scale-out.md says.
func (b *Bench) startReplica(instance, name, yaml string) (*Gateway, error) {
	key := sha256.Sum256([]byte("bench keystore key of " + instance))
	return b.startGateway("replica-"+name, yaml, instance, func(url string) []string {
		return []string{"--replica", name, "--advertise-url", url}
	}, "HANGAR_KEYSTORE_KEY="+base64.StdEncoding.EncodeToString(key[:]))
}

// storeWrites times one decision write per sample on each driver.
func (b *Bench) storeWrites(ctx context.Context, pg *pgtest.Cluster) (Summary, Summary, error) {
	n := b.n(400, 100)
	dir := filepath.Join(b.tmp, "stores")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Summary{}, Summary{}, err
	}
	lite, err := store.Open(filepath.Join(dir, "hangar.db"), store.Options{})
	if err != nil {
		return Summary{}, Summary{}, err
	}
	defer lite.Close()
	u, err := pg.Schema(ctx)
	if err != nil {
		return Summary{}, Summary{}, err
	}
	shared, err := store.OpenPostgres(store.PostgresConfig{URL: u, PasswordFile: pg.PasswordFile, KeyDir: dir}, store.Options{})
	if err != nil {
		return Summary{}, Summary{}, err
	}
	defer shared.Close()
	write := func(db store.Decisions) (Summary, error) {
		lat := make([]time.Duration, 0, n)
		for i := range n {
			d := store.Decision{Key: "bench-" + strconv.Itoa(i), Kind: store.DecisionApproved, Fingerprint: randomHex(8),
				Source: "bench", At: time.Now()}
			t := time.Now()
			if err := db.PutDecision(ctx, d); err != nil {
				return Summary{}, err
			}
			lat = append(lat, time.Since(t))
		}
		return Summarize(lat), nil
	}
	sl, err := write(lite)
	if err != nil {
		return Summary{}, Summary{}, fmt.Errorf("sqlite writes: %w", err)
	}
	sp, err := write(shared)
	if err != nil {
		return Summary{}, Summary{}, fmt.Errorf("postgresql writes: %w", err)
	}
	return sl, sp, nil
}

// loadReplicas runs 32 clients, spread evenly over gws, each calling
// math__add perClient times.
func (b *Bench) loadReplicas(ctx context.Context, gws []*Gateway, perClient int) (ThroughputResult, error) {
	const clients = 32
	var clis []*Client
	defer func() { CloseAll(clis) }()
	for i := range clients {
		c, err := Dial(ctx, gws[i%len(gws)].MCPURL)
		if err != nil {
			return ThroughputResult{}, err
		}
		clis = append(clis, c)
	}
	args := map[string]any{"a": 1, "b": 2}
	workers := make([]callFn, len(clis))
	for i, c := range clis {
		workers[i] = func(ctx context.Context, _ int) error {
			res, err := c.Call(ctx, "math__add", args)
			if err == nil && res.IsError {
				err = fmt.Errorf("tool error: %s", resultText(res))
			}
			return err
		}
	}
	if _, _, err := measure(ctx, workers, b.n(20, 5)); err != nil { // warm-up
		return ThroughputResult{}, err
	}
	lat, wall, err := measure(ctx, workers, perClient)
	if err != nil {
		return ThroughputResult{}, err
	}
	return ThroughputResult{Calls: len(lat), PerSec: float64(len(lat)) / wall.Seconds(), Lat: Summarize(lat)}, nil
}

// propagation installs and uninstalls a remote server through r1 and
// times until r2's mcp/list agrees.
func (b *Bench) propagation(ctx context.Context, r1, r2 *Gateway) (Summary, error) {
	floor, err := StartFloor(nil)
	if err != nil {
		return Summary{}, err
	}
	defer floor.Stop()
	c1 := &manage.Client{URL: r1.MCPURL, HTTP: ownHTTPClient()}
	c2 := &manage.Client{URL: r2.MCPURL, HTTP: ownHTTPClient()}
	listed := func(name string) (bool, error) {
		var l manage.ListResult
		if err := c2.Call(ctx, manage.MethodList, map[string]any{}, &l); err != nil {
			return false, err
		}
		return slices.ContainsFunc(l.Servers, func(it manage.Item) bool { return it.Name == name || it.ID == name }), nil
	}
	await := func(name string, want bool) (time.Duration, error) {
		began := time.Now()
		for deadline := began.Add(10 * time.Second); ; {
			got, err := listed(name)
			if err != nil {
				return 0, err
			}
			if got == want {
				return time.Since(began), nil
			}
			if time.Now().After(deadline) {
				return 0, fmt.Errorf("%s: r2 did not see the change made on r1 within 10s", name)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	var lat []time.Duration
	for i := range b.n(10, 3) {
		name := "prop" + strconv.Itoa(i)
		cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{name: map[string]any{"url": floor.URL}}})
		began := time.Now()
		if err := c1.Call(ctx, manage.MethodInstall, map[string]any{"config_json": string(cfg)}, nil); err != nil {
			return Summary{}, err
		}
		answered := time.Since(began)
		d, err := await(name, true)
		if err != nil {
			return Summary{}, err
		}
		lat = append(lat, d)
		b.log.Debug("propagated", "change", "install", "answer", answered, "seen", d)
		if err := c1.Call(ctx, manage.MethodUninstall, map[string]any{"name": name}, nil); err != nil {
			return Summary{}, err
		}
		if d, err = await(name, false); err != nil {
			return Summary{}, err
		}
		lat = append(lat, d)
	}
	return Summarize(lat), nil
}

// forwarding times a 2025-11-25 session's calls on the replica that holds
// the session and, with the same session, on the other one.
func (b *Bench) forwarding(ctx context.Context, owner, other *Gateway) (Summary, Summary, error) {
	ou, err := url.Parse(owner.MCPURL)
	if err != nil {
		return Summary{}, Summary{}, err
	}
	xu, err := url.Parse(other.MCPURL)
	if err != nil {
		return Summary{}, Summary{}, err
	}
	// One session, opened on owner; each request goes where to says.
	to := &atomic.Pointer[url.URL]{}
	to.Store(ou)
	hc := ownHTTPClient()
	hc.Transport = redirect{base: hc.Transport, to: to}
	tr, err := transport.NewStreamableHTTP(owner.MCPURL, transport.WithHTTPBasicClient(hc))
	if err != nil {
		return Summary{}, Summary{}, err
	}
	mc := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	defer mc.Close()
	if err := mc.Start(ctx); err != nil {
		return Summary{}, Summary{}, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "hangar-bench", Version: "0"}
	if _, err := mc.Initialize(ctx, init); err != nil {
		return Summary{}, Summary{}, err
	}
	c := &Client{Client: mc}
	n := b.n(600, 100)
	call := func(ctx context.Context, _ int) error {
		res, err := c.Call(ctx, "math__add", map[string]any{"a": 1, "b": 2})
		if err == nil && res.IsError {
			err = fmt.Errorf("tool error: %s", resultText(res))
		}
		return err
	}
	var onOwner, forwarded []time.Duration
	// Rounds alternate, so that drift on the machine falls on both alike.
	for round := range 6 {
		for _, u := range []*url.URL{ou, xu} {
			to.Store(u)
			lat, _, err := measure(ctx, []callFn{call}, n/6)
			if err != nil {
				return Summary{}, Summary{}, fmt.Errorf("round %d via %s: %w", round, u.Host, err)
			}
			if u == ou {
				onOwner = append(onOwner, lat...)
			} else {
				forwarded = append(forwarded, lat...)
			}
		}
	}
	return Summarize(onOwner), Summarize(forwarded), nil
}

// redirect sends every request to the host to holds: a client whose
// balancer moved it to another replica mid-session.
type redirect struct {
	base http.RoundTripper
	to   *atomic.Pointer[url.URL]
}

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	u := r.to.Load()
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = u.Scheme, u.Host
	req.Host = u.Host
	return r.base.RoundTrip(req)
}
