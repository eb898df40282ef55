package app

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/forward"
)

// wire stands between two replicas: r1 forwards to it (it is r2's
// advertise URL) and it passes each request on to r2, keeping a copy of
// the last one, as an eavesdropper on the replica network would.
type wire struct {
	URL string
	to  atomic.Pointer[url.URL]

	mu   sync.Mutex
	hdr  http.Header
	body []byte
}

func newWire(t *testing.T) *wire {
	w := &wire{}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	srv := httptest.NewServer(&httputil.ReverseProxy{
		Transport: tr,
		Rewrite: func(pr *httputil.ProxyRequest) {
			b, _ := io.ReadAll(pr.In.Body)
			pr.Out.Body = io.NopCloser(bytes.NewReader(b))
			w.mu.Lock()
			w.hdr, w.body = pr.In.Header.Clone(), b
			w.mu.Unlock()
			pr.SetURL(w.to.Load())
			pr.Out.URL.Path = pr.In.URL.Path
		},
		FlushInterval: -1,
	})
	t.Cleanup(srv.Close)
	w.URL = srv.URL
	return w
}

func (w *wire) captured() (http.Header, []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hdr, w.body
}

// TestReplicasForwardProofIsSingleUse: what one replica forwards to
// another carries a proof of that one request; an eavesdropper who
// captured it cannot use it again: not with the same request, not with
// another one, not at another replica. Each refusal is a 403 and an audit
// entry with the reason, and the proof shows in neither.
func TestReplicasForwardProofIsSingleUse(t *testing.T) {
	t.Parallel()
	tok := "hgr_proof-0123456789abcdef"
	path, instance := replicaConfig(t, fmt.Sprintf(
		"auth: {tokens: [{name: agent, token: %q, scopes: [hangar:read, hangar:call]}], rate_limit: {rps: 100, burst: 100}}\n", tok))
	w := newWire(t)
	r1 := startReplica(t, path, instance, "r1")
	r2 := startReplicaIn(t, path, instance, "r2", t.TempDir(), io.Discard, func(o *Options) { o.AdvertiseURL = w.URL })
	r3 := startReplica(t, path, instance, "r3")
	u, _ := url.Parse(r2.URL)
	w.to.Store(&url.URL{Scheme: u.Scheme, Host: u.Host})

	send := func(url, sid, body string, hdr http.Header) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
		for k, v := range hdr {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tok)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, r2.URL, strings.NewReader(init))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || forward.Owner(sid) != "r2" {
		t.Fatalf("initialize at r2: %d, session %q", resp.StatusCode, sid)
	}
	if st, b := send(r2.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil); st != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", st, b)
	}

	// The session's request lands on r1, which forwards it over the wire.
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if st, b := send(r1.URL, sid, ping, nil); st != http.StatusOK || !strings.Contains(b, `"result"`) {
		t.Fatalf("ping of r2's session sent to r1: %d %s", st, b)
	}
	hdr, body := w.captured()
	if hdr.Get(forward.Header) != "r1" || hdr.Get(forward.ProofHeader) == "" || string(body) != ping {
		t.Fatalf("the wire saw %v with body %q; want a forward of r1 with a proof", hdr, body)
	}
	proof := hdr.Get(forward.ProofHeader)
	stolen := http.Header{forward.Header: {"r1"}, forward.ProofHeader: {proof}}

	replays := []struct {
		name, url, body string
	}{
		{"the same request again", r2.URL, ping},
		{"another request", r2.URL, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"hangar_list"}}`},
		{"at another replica", r3.URL, ping},
	}
	for _, rp := range replays {
		if st, b := send(rp.url, sid, rp.body, stolen); st != http.StatusForbidden {
			t.Errorf("captured proof replayed, %s: %d %.200s; want 403", rp.name, st, b)
		} else if strings.Contains(b, proof) {
			t.Errorf("%s: the answer shows the proof: %s", rp.name, b)
		}
	}
	// A fresh forward still works: each has a proof of its own.
	if st, b := send(r1.URL, sid, ping, nil); st != http.StatusOK {
		t.Errorf("a second forward: %d %s", st, b)
	}

	// What the docs tell operators to watch: r1 counts its forwards, r2
	// and r3 their refusals; each counts three live replicas and reaches
	// the store.
	if n := metric(t, r1, "hangar_forwarded_requests_total", "outcome", "forwarded"); n < 2 {
		t.Errorf("r1's hangar_forwarded_requests_total{outcome=forwarded} = %v, want 2", n)
	}
	for _, r := range []*replica{r2, r3} {
		if n := metric(t, r, "hangar_refusals_total", "reason", "forward_refused"); n < 1 {
			t.Errorf("%s's hangar_refusals_total{reason=forward_refused} = %v, want the refusals counted", r.member.Self.Replica, n)
		}
	}
	for _, r := range []*replica{r1, r2, r3} {
		deadline := time.Now().Add(10 * time.Second)
		for metric(t, r, "hangar_replicas_live") != 3 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := metric(t, r, "hangar_replicas_live"); n != 3 {
			t.Errorf("%s's hangar_replicas_live = %v, want 3", r.member.Self.Replica, n)
		}
		if n := metric(t, r, "hangar_store_reachable"); n != 1 {
			t.Errorf("%s's hangar_store_reachable = %v, want 1", r.member.Self.Replica, n)
		}
	}

	// Each replica audited its refusals with the reason, never the proof.
	for _, r := range []*replica{r2, r3} {
		deadline := time.Now().Add(5 * time.Second)
		for {
			es, err := r.Gateway.AuditStore.RecentAudit(t.Context(), "", 50)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, e := range es {
				if strings.HasPrefix(e.Reason, "forward_refused: ") {
					n++
					if strings.Contains(e.Reason+e.Tool+e.Identity, proof) {
						t.Errorf("audit entry shows the proof: %+v", e)
					}
				}
			}
			if n > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s audited no forward refusal: %+v", r.member.Self.Replica, es)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestReplicaRefusesWildcardAdvertiseURL: a replica that would advertise a
// wildcard address (its listen address by default) does not start, and
// says what to set; the others would send its sessions' requests to
// themselves.
func TestReplicaRefusesWildcardAdvertiseURL(t *testing.T) {
	t.Parallel()
	path, instance := replicaConfig(t, "")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{
		{Listen: "0.0.0.0:8080"},
		{Listen: "[::]:8080"},
		{Listen: "127.0.0.1:8080", AdvertiseURL: "http://:8080"},
		{Listen: "127.0.0.1:8080", AdvertiseURL: "http://0.0.0.0:9000"},
	} {
		o.Instance, o.Replica, o.DataDir = instance, "r1", t.TempDir()
		shareKey(t, o.DataDir, instance)
		o.Log = slog.New(slog.DiscardHandler)
		a, err := New(cfg, o)
		if err == nil {
			_ = a.Close(context.Background())
			t.Errorf("listen %s, advertise %q: the replica started", o.Listen, o.AdvertiseURL)
			continue
		}
		if !strings.Contains(err.Error(), "wildcard") || !strings.Contains(err.Error(), "--advertise-url") {
			t.Errorf("listen %s, advertise %q: %v; want it to name the wildcard and --advertise-url", o.Listen, o.AdvertiseURL, err)
		}
	}
}

// metric is the value of the series of name with the given label values
// in r's registry (-1 when there is none).
func metric(t *testing.T, r *replica, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := r.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range m.GetLabel() {
					if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}
