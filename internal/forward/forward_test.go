package forward

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/store"
)

func TestIDAndOwner(t *testing.T) {
	t.Parallel()
	tests := []struct {
		random, replica, id, owner string
	}{
		{"ABCDEF234567", "", "ABCDEF234567", ""},
		{"ABCDEF234567", "r1", "ABCDEF234567~r1", "r1"},
		{"cont_0a1b2c", "gw-2.example_x", "cont_0a1b2c~gw-2.example_x", "gw-2.example_x"},
	}
	for _, tt := range tests {
		if id := ID(tt.random, tt.replica); id != tt.id {
			t.Errorf("ID(%q, %q) = %q, want %q", tt.random, tt.replica, id, tt.id)
		}
		if o := Owner(tt.id); o != tt.owner {
			t.Errorf("Owner(%q) = %q, want %q", tt.id, o, tt.owner)
		}
	}
}

func TestOwnerIn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body, owner string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","requestState":"S~r2"}}`, "r2"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hangar_fetch_continuation","arguments":{"continuation_id":"cont_ab~r3"}}}`, "r3"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"continuation_id":7,"text":"a~b"}}}`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"text":"a~b"}}}`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"requestState":"S~r2"}}`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","requestState":"plain"}}`, ""},
		{`[{"jsonrpc":"2.0"}]~`, ""},
		{`not json ~`, ""},
	}
	for _, tt := range tests {
		if o := ownerIn([]byte(tt.body)); o != tt.owner {
			t.Errorf("ownerIn(%s) = %q, want %q", tt.body, o, tt.owner)
		}
	}
}

// replicas is a router of replica r1 whose members are the given
// replicas at the given URLs (heartbeat now, unless stale).
func router(urls map[string]string, stale ...string) *Router {
	return &Router{Self: "r1", Key: []byte("0123456789abcdef0123456789abcdef"), Live: 15 * time.Second, MaxBody: 1 << 10, Members: func(context.Context) ([]store.Member, error) {
		var ms []store.Member
		for name, u := range urls {
			beat := time.Now()
			for _, s := range stale {
				if s == name {
					beat = beat.Add(-time.Hour)
				}
			}
			ms = append(ms, store.Member{Replica: name, AdvertiseURL: u, HeartbeatAt: beat})
		}
		return ms, nil
	}}
}

// served records what reached a handler.
type served struct {
	where, hop, auth, body, host string
	trusted                      bool
}

// owner checks proofs as the replicas of the test's instance do.
var owner = &Router{Self: "r2", Key: []byte("0123456789abcdef0123456789abcdef")}

func recorder(where string, got chan<- served) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		trusted, _ := owner.Check(r)
		got <- served{where: where, hop: r.Header.Get(Header), auth: r.Header.Get("Authorization"), body: string(b), host: r.Host,
			trusted: trusted}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		// Two events with a pause: the second must not be needed for the
		// first to arrive (streaming, not buffering).
		fmt.Fprint(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		if r.URL.Query().Get("wait") != "" {
			<-r.Context().Done()
			return
		}
		fmt.Fprint(w, "data: two\n\n")
	})
}

// TestMiddleware: which requests are passed to their owner and how, and
// which are served where they land.
func TestMiddleware(t *testing.T) {
	t.Parallel()
	got := make(chan served, 4)
	// r2 is a replica with the middleware in front of it too: a forwarded
	// request is served there, never forwarded again.
	r2 := httptest.NewServer(recorder("r2", got))
	t.Cleanup(r2.Close)
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close() // r4 is listed live but does not answer
	f := router(map[string]string{"r1": "http://unused", "r2": r2.URL, "r3": "http://127.0.0.1:1", "r4": dead.URL}, "r3")
	h := f.Middleware(recorder("here", got))
	long := `{"method":"tools/call","params":{"requestState":"S~r2","arguments":{"pad":"` + strings.Repeat("x", 2000) + `"}}}`

	tests := []struct {
		name, method, session, hop, body, where string
	}{
		{"no id", http.MethodPost, "", "", `{"method":"initialize"}`, "here"},
		{"own session", http.MethodPost, "A~r1", "", `{"method":"ping"}`, "here"},
		{"session of another replica", http.MethodPost, "A~r2", "", `{"method":"ping"}`, "r2"},
		{"GET stream of another replica's session", http.MethodGet, "A~r2", "", "", "r2"},
		{"DELETE of another replica's session", http.MethodDelete, "A~r2", "", "", "r2"},
		{"requestState of another replica", http.MethodPost, "", "", `{"method":"tools/call","params":{"name":"t","requestState":"S~r2"}}`, "r2"},
		{"continuation of another replica", http.MethodPost, "", "", `{"method":"tools/call","params":{"name":"hangar_fetch_continuation","arguments":{"continuation_id":"cont_1~r2"}}}`, "r2"},
		{"already forwarded", http.MethodPost, "A~r2", "r9", `{"method":"ping"}`, "here"},
		{"owner gone (stale heartbeat)", http.MethodPost, "A~r3", "", `{"method":"ping"}`, "here"},
		{"owner unknown", http.MethodPost, "A~r7", "", `{"method":"ping"}`, "here"},
		{"owner unreachable", http.MethodPost, "A~r4", "", `{"method":"ping"}`, "here"},
		{"body over the bound, its id not read", http.MethodPost, "", "", long, "here"},
		{"body over the bound in another replica's session", http.MethodPost, "A~r2", "", long, "here"},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(tt.method, "/mcp", strings.NewReader(tt.body))
		req.Header.Set("Authorization", "Bearer tok-123")
		if tt.session != "" {
			req.Header.Set(sessionHeader, tt.session)
		}
		if tt.hop != "" {
			req.Header.Set(Header, tt.hop)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		s := <-got
		if s.where != tt.where || s.body != tt.body || s.auth != "Bearer tok-123" {
			t.Errorf("%s: served %s with body %.60q, Authorization %q; want %s with the body as sent", tt.name, s.where, s.body, s.auth, tt.where)
		}
		if tt.where == "r2" && (s.hop != "r1" || !s.trusted) {
			t.Errorf("%s: %s header %q, trusted %v; want r1, proven", tt.name, Header, s.hop, s.trusted)
		}
		if tt.where == "here" && (s.hop != tt.hop || s.host != req.Host) {
			t.Errorf("%s: served here with %s %q, Host %q; want them as sent", tt.name, Header, s.hop, s.host)
		}
		if rec.Body.String() != "data: one\n\ndata: two\n\n" {
			t.Errorf("%s: answer %q", tt.name, rec.Body.String())
		}
	}

	// A stream from the owner arrives event by event.
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/mcp?wait=1", nil)
	req.Header.Set(sessionHeader, "A~r2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "data: one\n" {
		t.Fatalf("first event of a held stream: %q, %v", line, err)
	}
	if s := <-got; s.where != "r2" {
		t.Errorf("stream served by %s", s.where)
	}
}

// TestCheck: a request forwarded by a replica of the instance proves it,
// once; a client that marks its request as forwarded does not, nor does a
// replica of another instance (another key), nor a proof made for another
// request, another replica, or more than Window ago.
func TestCheck(t *testing.T) {
	t.Parallel()
	key := []byte("0123456789abcdef0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	r1 := &Router{Self: "r1", Key: key, Now: clock}
	stranger := &Router{Self: "r1", Key: []byte("another key of 32 bytes, really."), Now: clock}
	const uri, body = "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	req := func(method, uri, body, by, proof string) *http.Request {
		r := httptest.NewRequest(method, uri, strings.NewReader(body))
		if by != "" {
			r.Header.Set(Header, by)
		}
		if proof != "" {
			r.Header.Set(ProofHeader, proof)
		}
		return r
	}
	ok := r1.prove("r2", http.MethodPost, uri, []byte(body))
	at := func(d time.Duration) string {
		r := &Router{Self: "r1", Key: key, Now: func() time.Time { return now.Add(d) }}
		return r.prove("r2", http.MethodPost, uri, []byte(body))
	}
	tests := []struct {
		name    string
		r       *http.Request
		fwd     bool
		refusal string
	}{
		{"not forwarded", req(http.MethodPost, uri, body, "", ""), false, ""},
		{"forwarded by r1", req(http.MethodPost, uri, body, "r1", ok), true, ""},
		{"the same proof again", req(http.MethodPost, uri, body, "r1", ok), false, RefusedReplayed},
		{"a proof from 29s ago", req(http.MethodPost, uri, body, "r1", at(-29*time.Second)), true, ""},
		{"a proof from 29s ahead (clock skew)", req(http.MethodPost, uri, body, "r1", at(29*time.Second)), true, ""},
		{"a proof from 31s ago", req(http.MethodPost, uri, body, "r1", at(-31*time.Second)), false, RefusedExpired},
		{"a proof from 31s ahead", req(http.MethodPost, uri, body, "r1", at(31*time.Second)), false, RefusedExpired},
		{"marked by a client", req(http.MethodPost, uri, body, "r1", ""), false, RefusedMissing},
		{"a proof without its replica", req(http.MethodPost, uri, body, "", r1.prove("r2", http.MethodPost, uri, []byte(body))), false, RefusedMissing},
		{"another body", req(http.MethodPost, uri, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "r1",
			r1.prove("r2", http.MethodPost, uri, []byte(body))), false, RefusedInvalid},
		{"another request URI", req(http.MethodPost, "/mcp?x=1", body, "r1", r1.prove("r2", http.MethodPost, uri, []byte(body))), false, RefusedInvalid},
		{"another method", req(http.MethodDelete, uri, "", "r1", r1.prove("r2", http.MethodGet, uri, nil)), false, RefusedInvalid},
		{"made for another replica", req(http.MethodPost, uri, body, "r1", r1.prove("r3", http.MethodPost, uri, []byte(body))), false, RefusedInvalid},
		{"claimed by another sender", req(http.MethodPost, uri, body, "r3", r1.prove("r2", http.MethodPost, uri, []byte(body))), false, RefusedInvalid},
		{"another instance's replica", req(http.MethodPost, uri, body, "r1", stranger.prove("r2", http.MethodPost, uri, []byte(body))), false, RefusedInvalid},
		{"a forged proof", req(http.MethodPost, uri, body, "r1", "t=1800000000;n=AAAAAAAAAAAAAAAAAAAAAA;s="+strings.Repeat("0", 64)), false, RefusedInvalid},
		{"the proof of the old format", req(http.MethodPost, uri, body, "r1", strings.Repeat("0", 64)), false, RefusedMalformed},
		{"a nonce of another length", req(http.MethodPost, uri, body, "r1", "t=1800000000;n=AAAA;s="+strings.Repeat("0", 64)), false, RefusedMalformed},
		{"a GET stream", req(http.MethodGet, uri, "", "r1", r1.prove("r2", http.MethodGet, uri, nil)), true, ""},
	}
	r2 := &Router{Self: "r2", Key: key, Now: clock}
	for _, tt := range tests {
		fwd, refusal := r2.Check(tt.r)
		if fwd != tt.fwd || refusal != tt.refusal {
			t.Errorf("%s: Check = %v, %q; want %v, %q", tt.name, fwd, refusal, tt.fwd, tt.refusal)
		}
		// The body is there for whoever serves the request.
		if b, _ := io.ReadAll(tt.r.Body); tt.r.Method == http.MethodPost && len(b) == 0 {
			t.Errorf("%s: the body is gone", tt.name)
		}
	}
	if _, refusal := (&Router{Self: "r2"}).Check(req(http.MethodPost, uri, body, "r1", r1.prove("r2", http.MethodPost, uri, []byte(body)))); refusal != RefusedNoKey {
		t.Errorf("a router without a key: %q, want %q", refusal, RefusedNoKey)
	}
	big := &Router{Self: "r2", Key: key, Now: clock, MaxBody: 8}
	if _, refusal := big.Check(req(http.MethodPost, uri, body, "r1", r1.prove("r2", http.MethodPost, uri, []byte(body)))); refusal != RefusedBody {
		t.Errorf("a body over the bound: %q, want %q", refusal, RefusedBody)
	}
}

// TestNonces: a nonce is good once; the remembered ones go when their
// proof expires; when there is no room left, a proof is refused rather
// than a nonce forgotten.
func TestNonces(t *testing.T) {
	t.Parallel()
	n := nonces{max: 2}
	now := time.Unix(1_800_000_000, 0)
	a, b, c := [16]byte{1}, [16]byte{2}, [16]byte{3}
	if n.use(a, now.Add(Window), now) != nonceFresh || n.use(a, now.Add(Window), now) != nonceReplayed {
		t.Fatal("a nonce used twice was fresh twice")
	}
	if n.use(b, now.Add(time.Second), now) != nonceFresh {
		t.Fatal("b refused")
	}
	if got := n.use(c, now.Add(Window), now); got != nonceFull {
		t.Fatalf("c with no room: %d, want full", got)
	}
	later := now.Add(2 * time.Second) // b's proof has expired: its place is free
	if got := n.use(c, later.Add(Window), later); got != nonceFresh {
		t.Fatalf("c once b expired: %d, want fresh", got)
	}
	if n.use(a, later.Add(Window), later) != nonceReplayed {
		t.Error("a forgotten before its proof expired")
	}
}

// TestCheckAdvertiseURL: a wildcard host is no address to forward to.
func TestCheckAdvertiseURL(t *testing.T) {
	t.Parallel()
	for u, ok := range map[string]bool{
		"http://hangar_hangar.1.abc:8080": true,
		"http://10.0.0.5:8080":            true,
		"https://gw-2.example":            true,
		"http://[fd00::5]:8080":           true,
		"http://0.0.0.0:8080":             false,
		"http://[::]:8080":                false,
		"http://:8080":                    false,
		"http://":                         false,
		"":                                false,
		"ftp://gw:21":                     false,
		"gw:8080":                         false,
	} {
		if err := CheckAdvertiseURL(u); (err == nil) != ok {
			t.Errorf("CheckAdvertiseURL(%q) = %v, want ok %v", u, err, ok)
		}
	}
	err := CheckAdvertiseURL("http://0.0.0.0:8080")
	if err == nil || !strings.Contains(err.Error(), "--advertise-url") || !strings.Contains(err.Error(), "HANGAR_ADVERTISE_URL") {
		t.Errorf("the wildcard's error does not say what to set: %v", err)
	}
}
