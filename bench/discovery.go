package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/moby/moby/client"

	"github.com/mcp-hangar/hangar/internal/dockerrt"
)

// Figures 5 and 6 measure features that may not be built yet: discovery of
// labelled containers and hot-loading of providers. Both are looked up in
// the gateway's tools/list; when absent the figure says so.

// Discovery labels (see internal/discovery): a container opts in with
// enabled=true and names its server.
const (
	discLabelEnabled = "mcp.hangar.enabled"
	discLabelName    = "mcp.hangar.name"
)

// Tools the figures look for.
const (
	toolDiscovered = "hangar_discovered" // lists discovered (pending) servers
	toolDiscover   = "hangar_discover"   // runs a discovery cycle
	toolLoad       = "hangar_load"       // hot-loads a provider
	toolUnload     = "hangar_unload"
)

// discoveryYAML is the extra configuration of the gateway of figures 5 and
// 6. refresh_interval_s is left at its default: discovery must react to
// engine events, not to the periodic scan.
const discoveryYAML = `discovery:
  enabled: true
  sources:
    - type: docker
`

// DiscoveryResult is figure 5.
type DiscoveryResult struct {
	Skipped    string   // why it was not measured
	Polled     []string // the tools polled for the new name
	Visible    Summary  // container start → the name appears in a polled tool
	EventFloor Summary  // container start → a watcher of engine events sees the start
	Gone       Summary  // container removed → the name disappears
	Missed     int      // never appeared within the per-sample deadline
	Stayed     int      // still listed 3 s after removal
	MissNotes  []string
}

func resultTextOf(m map[string]any) string {
	if e, ok := m["error"].(string); ok {
		return e
	}
	return fmt.Sprint(m)
}

// whyMissed looks for a name that never became visible in quarantine, for
// the report.
func (b *Bench) whyMissed(ctx context.Context, c *Client, tools map[string]mcp.Tool, name string) string {
	if _, ok := tools["hangar_quarantine"]; ok {
		if res, err := c.Call(ctx, "hangar_quarantine", nil); err == nil && strings.Contains(resultText(res), `"`+name+`"`) {
			return name + " was quarantined: " + oneLine(resultText(res))
		}
	}
	return name + " not listed within the deadline"
}

// LoadResult is figure 6.
type LoadResult struct {
	Skipped     string
	FirstAnswer Summary // hangar_load sent → first successful tool answer
	LoadCall    Summary // the hangar_load round trip alone
	Args        map[string]any
}

// discoveredNameIn reports whether a tool's answer lists name.
func discoveredNameIn(c *Client, ctx context.Context, tool, name string) (bool, error) {
	res, err := c.Call(ctx, tool, nil)
	if err != nil {
		return false, err
	}
	if res.IsError {
		return false, fmt.Errorf("%s: tool error: %.300s", tool, resultText(res))
	}
	return strings.Contains(resultText(res), `"`+name+`"`), nil
}

// Discovery measures figure 5 on gateway g (started with discoveryYAML),
// whose tools are tools.
func (b *Bench) Discovery(ctx context.Context, g *Gateway, c *Client, tools map[string]mcp.Tool) (*DiscoveryResult, error) {
	res := &DiscoveryResult{}
	switch {
	case !g.Config.Discovery.Enabled:
		res.Skipped = "not measured: the config parser does not accept `discovery.enabled`"
		return res, nil
	case tools[toolDiscovered].Name == "" && tools[toolDiscover].Name == "":
		res.Skipped = "not measured: discovery is not built yet (the gateway has no " + toolDiscovered + " or " + toolDiscover + " tool)"
		return res, nil
	}
	// The tools may exist before discovery is wired into the gateway; they
	// then answer with an error object instead of a list.
	if tools[toolDiscovered].Name != "" {
		m, err := c.MustCall(ctx, toolDiscovered, nil)
		if err != nil {
			return nil, err
		}
		if _, ok := m["pending"]; !ok {
			res.Skipped = fmt.Sprintf("not measured: discovery is not built yet (%s answers %q with discovery enabled in the config)", toolDiscovered, resultTextOf(m))
			return res, nil
		}
	}
	// A discovered server is either pending (hangar_discovered) or, when
	// registered automatically, served (hangar_list): poll both.
	if tools[toolDiscovered].Name != "" {
		res.Polled = append(res.Polled, toolDiscovered)
	}
	res.Polled = append(res.Polled, "hangar_list")
	listed := func(name string) (bool, error) {
		for _, t := range res.Polled {
			ok, err := discoveredNameIn(c, ctx, t, name)
			if err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	}

	owner := b.Owner("disc")
	// A watcher of engine start events: the least any discovery could do.
	ectx, stopEvents := context.WithCancel(ctx)
	defer stopEvents()
	ev := b.docker.Events(ectx, client.EventsListOptions{Filters: make(client.Filters).
		Add("type", "container").Add("event", "start").
		Add("label", dockerrt.LabelOwner+"="+owner)})
	var evMu sync.Mutex
	started := map[string]time.Time{}
	go func() {
		for {
			select {
			case m := <-ev.Messages:
				evMu.Lock()
				started[m.Actor.ID] = time.Now()
				evMu.Unlock()
			case <-ev.Err:
				return
			case <-ectx.Done():
				return
			}
		}
	}()
	time.Sleep(250 * time.Millisecond)

	samples := b.n(20, 5)
	const deadline = 10 * time.Second
	var vis, floor, gone []time.Duration
	for i := range samples {
		if res.Missed >= 2 {
			break
		}
		name := fmt.Sprintf("%s-d%02d", owner, i)
		id, err := b.createLabelled(ctx, owner, name)
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		if _, err := b.docker.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
			_ = b.RemoveContainer(ctx, id)
			return nil, fmt.Errorf("start labelled container: %w", err)
		}
		seen := false
		tick := time.NewTicker(10 * time.Millisecond)
		for time.Since(t0) < deadline && ctx.Err() == nil {
			ok, err := listed(name)
			if err != nil {
				tick.Stop()
				_ = b.RemoveContainer(ctx, id)
				return nil, err
			}
			if ok {
				vis = append(vis, time.Since(t0))
				seen = true
				break
			}
			<-tick.C
		}
		tick.Stop()
		if !seen {
			res.Missed++
			res.MissNotes = append(res.MissNotes, b.whyMissed(ctx, c, tools, name))
		}
		evMu.Lock()
		if t, ok := started[id]; ok {
			floor = append(floor, t.Sub(t0))
		}
		evMu.Unlock()

		t1 := time.Now()
		if err := b.RemoveContainer(ctx, id); err != nil {
			return nil, err
		}
		if seen {
			for {
				ok, err := listed(name)
				if err != nil {
					return nil, err
				}
				if !ok {
					gone = append(gone, time.Since(t1))
					break
				}
				if time.Since(t1) > 3*time.Second {
					res.Stayed++
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		b.log.Info("figure 5: discovery", "sample", i+1, "of", samples, "seen", seen)
	}
	if err := b.WaitGone(ctx, 20*time.Second, owner); err != nil {
		return nil, err
	}
	res.Visible, res.EventFloor, res.Gone = Summarize(vis), Summarize(floor), Summarize(gone)
	return res, nil
}

// createLabelled creates (not starts) a testkit container serving MCP over
// HTTP on the default bridge, labelled for discovery. It is hardened like
// a provider, carries the bench's owner label for cleanup, and is not
// marked as managed by a gateway (discovery ignores those).
func (b *Bench) createLabelled(ctx context.Context, owner, name string) (string, error) {
	cfg, host, netCfg, err := dockerrt.Build(dockerrt.Spec{
		ServerID: name,
		Owner:    owner,
		Image:    testkitImage,
		Args:     []string{"--transport", "http", "--port", "8080"},
		Network:  "bridge",
		ReadOnly: true,
		// The bench is the operator here.
		FromConfigFile: true,
		ExtraLabels: map[string]string{
			discLabelEnabled: "true",
			discLabelName:    name,
			benchLabelPid:    strconv.Itoa(os.Getpid()),
			benchLabelHost:   hostname(),
		},
	})
	if err != nil {
		return "", err
	}
	delete(cfg.Labels, dockerrt.LabelManaged)
	cctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	created, err := b.docker.ContainerCreate(cctx, client.ContainerCreateOptions{
		Config: cfg, HostConfig: host, NetworkingConfig: netCfg, Name: name,
	})
	if err != nil {
		return "", fmt.Errorf("create labelled container: %w", err)
	}
	return created.ID, nil
}

// catalogJSON is the local registry catalog of figure 6's gateway: one
// server.json whose OCI package is the math image, run over stdio.
const catalogJSON = `[{"name": "io.github.mcp-hangar/bench-math", "description": "Arithmetic, for the hot-load figure",
  "version": "1.0.0", "packages": [{"registryType": "oci", "identifier": "mcp-hangar/math", "version": "dev",
  "transport": {"type": "stdio"}}]}]`

// registryYAML points the gateway's registry at a catalog file.
func registryYAML(catalog string) string {
	return "registry:\n  url: \"\"\n  catalog_file: " + strconv.Quote(catalog) + "\n"
}

// HotLoad measures figure 6: hangar_load of the catalog's math server, then
// the time until a call to it answers, then hangar_unload.
func (b *Bench) HotLoad(ctx context.Context, g *Gateway, c *Client, tools map[string]mcp.Tool) (*LoadResult, error) {
	res := &LoadResult{}
	if _, ok := tools[toolLoad]; !ok {
		res.Skipped = "not measured: the gateway has no " + toolLoad + " tool"
		return res, nil
	}
	samples := b.n(10, 3)
	var first, call []time.Duration
	args := map[string]any{"name": "bench-math", "force_unverified": true}
	res.Args = args
	for i := range samples {
		t0 := time.Now()
		r, err := c.Call(ctx, toolLoad, args)
		if err != nil {
			return nil, err
		}
		call = append(call, time.Since(t0))
		var out struct {
			Status    string `json:"status"`
			MCPServer string `json:"mcp_server"`
			Message   string `json:"message"`
		}
		if r.IsError || json.Unmarshal([]byte(resultText(r)), &out) != nil || out.Status != "loaded" {
			return nil, fmt.Errorf("%s(%v): %s", toolLoad, args, resultText(r))
		}
		for {
			err := checkBatch(c.Call(ctx, "hangar_call", oneCall(out.MCPServer, "add", map[string]any{"a": 1, "b": 2})))
			if err == nil {
				first = append(first, time.Since(t0))
				break
			}
			if time.Since(t0) > 60*time.Second {
				return nil, fmt.Errorf("loaded %s never answered: %w", out.MCPServer, err)
			}
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil, ctx.Err()
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := c.Call(ctx, toolUnload, map[string]any{"mcp_server": out.MCPServer}); err != nil {
			return nil, err
		}
		b.log.Info("figure 6: hot-load", "sample", i+1, "of", samples)
	}
	res.FirstAnswer, res.LoadCall = Summarize(first), Summarize(call)
	return res, nil
}
