package app

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/manage"
)

// changedWatcher collects the mcp/changed notifications one way of
// receiving them gets: a 2025-11-25 session's stream, or /events (the way
// of 2026-07-28 clients, which have no stream of their own).
type changedWatcher struct {
	name string
	ch   chan []manage.Change
}

func (w *changedWatcher) got(params []byte) {
	var p struct {
		Changed []manage.Change `json:"changed"`
	}
	if json.Unmarshal(params, &p) == nil {
		w.ch <- p.Changed
	}
}

// next waits for the next mcp/changed, up to within.
func (w *changedWatcher) next(t *testing.T, within time.Duration) ([]manage.Change, bool) {
	t.Helper()
	select {
	case c := <-w.ch:
		return c, true
	case <-time.After(within):
		return nil, false
	}
}

// sessionWatcher is mcp-go's client on a 2025-11-25 session with its GET
// stream open.
func sessionWatcher(t *testing.T, url string) (*changedWatcher, *changeClient) {
	t.Helper()
	w := &changedWatcher{name: "mcp-go 2025-11-25 session", ch: make(chan []manage.Change, 64)}
	tr, err := transport.NewStreamableHTTP(url, transport.WithContinuousListening(), transport.WithHTTPBasicClient(httpClient(t)))
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	cc := &changeClient{name: w.name, changed: make(chan struct{}, 64)}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case manage.MethodChanged:
			b, _ := json.Marshal(n.Params.AdditionalFields)
			w.got(b)
		case string(mcp.MethodNotificationToolsListChanged):
			signal(cc.changed)
		}
	})
	life, end := context.WithCancel(context.Background())
	cc.close = sync.OnceFunc(func() { end(); _ = c.Close() })
	t.Cleanup(cc.close)
	if err := c.Start(life); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	return w, cc
}

// eventsWatcher reads /events.
func eventsWatcher(t *testing.T, url string) *changedWatcher {
	t.Helper()
	w := &changedWatcher{name: "/events", ch: make(chan []manage.Change, 64)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(url, "/mcp")+"/events", nil)
	resp, err := httpClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("/events: %d", resp.StatusCode)
	}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var m struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal([]byte(data), &m) == nil && m.Method == manage.MethodChanged {
				w.got(m.Params)
			}
		}
	}()
	return w
}

// TestReplicasNotifyChanged: an install, an update, a policy change and
// an uninstall made through one replica reach the other replica's
// watchers as mcp/changed with the same action (its 2025-11-25 sessions
// on their stream, /events for the others), within a second, and its
// clients of both SDKs on both protocol versions get list_changed.
func TestReplicasNotifyChanged(t *testing.T) {
	t.Parallel()
	path, instance := replicaConfig(t, "")
	r1 := startReplica(t, path, instance, "r1")
	r2 := startReplica(t, path, instance, "r2")
	remote := helloServer(t)

	session, sc := sessionWatcher(t, r2.URL)
	watchers := []*changedWatcher{session, eventsWatcher(t, r2.URL)}
	clients := []*changeClient{sc}
	for _, v := range []string{mcp.LATEST_LEGACY_PROTOCOL_VERSION, mcp.LATEST_PROTOCOL_VERSION} {
		clients = append(clients, sdkClient(t, r2.URL, v))
		if v == mcp.LATEST_PROTOCOL_VERSION {
			clients = append(clients, mcpgoClient(t, r2.URL, v))
		}
	}
	awaitStreams(t, r2, clients)
	// The session's stream is open once it got the list_changed above;
	// /events once r2 counts its subscriber... which it does not show:
	// a notification from r2 itself tells.
	r2.Manage.DiscoveryChanged(t.Context(), []string{"probe"})
	for _, w := range watchers {
		if c, ok := w.next(t, 10*time.Second); !ok || len(c) != 1 || c[0].Name != "probe" {
			t.Fatalf("%s: no probe notification from r2 (%v)", w.name, c)
		}
	}

	install := func(url string) {
		manageCall(t, url, manage.MethodInstall, map[string]any{"config_json": `{"mcpServers": {"remote": {"url": "` + remote + `"}}}`,
			"allow_implicit_invocation": true})
	}
	steps := []struct {
		what, action string
		do           func()
		listChanged  bool
	}{
		{"mcp/install", manage.ActionInstalled, func() { install(r1.URL) }, true},
		{"mcp/install again", manage.ActionUpdated, func() { install(r1.URL) }, false},
		{"mcp/policy/set", manage.ActionPolicy, func() {
			manageCall(t, r1.URL, manage.MethodPolicySet, map[string]any{"name": "remote", "allow_implicit_invocation": false})
		}, true},
		{"mcp/uninstall", manage.ActionUninstalled, func() { manageCall(t, r1.URL, manage.MethodUninstall, map[string]any{"name": "remote"}) }, false},
	}
	var lat []time.Duration
	for _, st := range steps {
		began := time.Now()
		st.do()
		for _, w := range watchers {
			c, ok := w.next(t, time.Second)
			if !ok {
				t.Errorf("%s through r1: no mcp/changed at r2's %s within 1s", st.what, w.name)
				continue
			}
			lat = append(lat, time.Since(began))
			if len(c) != 1 || c[0].Name != "remote" || c[0].Action != st.action {
				t.Errorf("%s through r1: r2's %s got %+v, want remote %s", st.what, w.name, c, st.action)
			}
		}
		if st.listChanged {
			awaitChanged(t, st.what, began, clients)
		}
		for _, c := range clients {
			for waitSignal(c.changed, 100*time.Millisecond) {
			}
		}
	}
	t.Logf("mcp/changed at the other replica's watchers after a change through r1: %v", lat)
}
