package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func itoa(n int) string { return strconv.Itoa(n) }

// countingListener counts accepted connections: a refused target must
// never see one.
type countingListener struct {
	net.Listener
	n atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// upstream is an HTTP server on loopback that names itself.
func upstream(t testing.TB, name string) (*httptest.Server, *countingListener, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Forwarded-For") != "" || r.Header.Get("Proxy-Authorization") != "" {
			http.Error(w, "proxy headers leaked", http.StatusTeapot)
			return
		}
		w.Header().Set("X-Seen-Host", r.Host)
		fmt.Fprintf(w, "hello from %s %s", name, r.URL.Path)
	}))
	srv.Listener = cl
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, cl, ln.Addr().(*net.TCPAddr).Port
}

type recorder struct {
	mu  sync.Mutex
	got []Refusal
}

func (r *recorder) add(x Refusal) {
	r.mu.Lock()
	r.got = append(r.got, x)
	r.mu.Unlock()
}

func (r *recorder) all() []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Refusal(nil), r.got...)
}

// startProxy serves a proxy allowing allow on loopback; names resolve by
// res.
func startProxy(t testing.TB, res Resolver, allow ...string) (*url.URL, *recorder) {
	t.Helper()
	a, err := ParseAllow(allow)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	p := &Proxy{Guard: &Guard{Allow: a, Resolver: res}, Refused: rec.add, Log: slog.New(slog.DiscardHandler)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}, rec
}

func proxiedClient(proxy *url.URL) *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
}

func TestProxy(t *testing.T) {
	t.Parallel()
	_, okCount, okPort := upstream(t, "allowed")
	_, deniedCount, deniedPort := upstream(t, "denied")
	res := &fakeResolver{answers: map[string][]string{
		"allowed.test": {"127.0.0.1"},
		"denied.test":  {"127.0.0.1"},
		"loop.test":    {"127.0.0.1"},
	}}
	// allowed.test reaches loopback only because an address rule names
	// 127.0.0.1 on its port: loopback stands in for "an address the admin
	// named" here.
	proxy, rec := startProxy(t, res,
		"allowed.test:"+itoa(okPort), "127.0.0.1:"+itoa(okPort), "loop.test:"+itoa(deniedPort))
	client := proxiedClient(proxy)

	tests := []struct {
		name       string
		url        string
		connect    bool
		wantStatus int
		wantBody   string
		wantReason string
	}{
		{name: "plain HTTP allowed", url: fmt.Sprintf("http://allowed.test:%d/x", okPort), wantStatus: 200, wantBody: "hello from allowed /x"},
		{name: "CONNECT allowed", url: fmt.Sprintf("allowed.test:%d", okPort), connect: true, wantStatus: 200, wantBody: "hello from allowed /t"},
		{name: "address rule", url: fmt.Sprintf("http://127.0.0.1:%d/y", okPort), wantStatus: 200, wantBody: "hello from allowed /y"},
		{name: "plain HTTP denied name", url: fmt.Sprintf("http://denied.test:%d/", deniedPort), wantStatus: 403, wantReason: ReasonNotAllowed},
		{name: "CONNECT denied name", url: fmt.Sprintf("denied.test:%d", deniedPort), connect: true, wantStatus: 403, wantReason: ReasonNotAllowed},
		{name: "direct address not allowed", url: fmt.Sprintf("http://127.0.0.1:%d/", deniedPort), wantStatus: 403, wantReason: ReasonNotAllowed},
		{name: "metadata address", url: "http://169.254.169.254/latest/meta-data/", wantStatus: 403, wantReason: ReasonNotAllowed},
		{name: "CONNECT metadata address", url: "169.254.169.254:443", connect: true, wantStatus: 403, wantReason: ReasonNotAllowed},
		{name: "allowed name resolving to loopback", url: fmt.Sprintf("http://loop.test:%d/", deniedPort), wantStatus: 403, wantReason: ReasonForbidden},
		{name: "CONNECT allowed name resolving to loopback", url: fmt.Sprintf("loop.test:%d", deniedPort), connect: true, wantStatus: 403, wantReason: ReasonForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(rec.all())
			var status int
			var body string
			if tt.connect {
				status, body = tunnelGet(t, proxy.Host, tt.url, "/t")
			} else {
				resp, err := client.Get(tt.url)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				status, body = resp.StatusCode, string(b)
			}
			if status != tt.wantStatus {
				t.Fatalf("status %d (%q), want %d", status, body, tt.wantStatus)
			}
			if tt.wantBody != "" && body != tt.wantBody {
				t.Errorf("body %q, want %q", body, tt.wantBody)
			}
			refs := rec.all()[before:]
			if tt.wantReason == "" {
				if len(refs) != 0 {
					t.Errorf("an allowed request reported refusals %v", refs)
				}
				return
			}
			if len(refs) != 1 || refs[0].Reason != tt.wantReason {
				t.Fatalf("refusals %v, want one %s", refs, tt.wantReason)
			}
			if !strings.Contains(body, "refused") {
				t.Errorf("the answer does not say the proxy refused: %q", body)
			}
		})
	}
	if n := deniedCount.n.Load(); n != 0 {
		t.Errorf("the denied server saw %d connections: refusals must come before any dial", n)
	}
	if okCount.n.Load() == 0 {
		t.Error("the allowed server saw no connection")
	}
}

// tunnelGet opens a CONNECT tunnel to target through the proxy at
// proxyAddr and sends a GET for path through it; a refused CONNECT
// returns the proxy's status and body.
func tunnelGet(t testing.TB, proxyAddr, target, path string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, target)
	inner, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(inner.Body)
	inner.Body.Close()
	return inner.StatusCode, string(b)
}

func TestProxyRefusesOriginFormAndHTTPSURLs(t *testing.T) {
	t.Parallel()
	proxy, rec := startProxy(t, &fakeResolver{}, "*.example.com")
	for _, target := range []string{"http://" + proxy.Host + "/", "https://a.example.com/"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, target, nil)
		var resp *http.Response
		var err error
		if strings.HasPrefix(target, "https://") {
			// Sent as an absolute https URL to the proxy, not tunnelled.
			c, derr := net.Dial("tcp", proxy.Host)
			if derr != nil {
				t.Fatal(derr)
			}
			fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: a.example.com\r\n\r\n", target)
			resp, err = http.ReadResponse(bufio.NewReader(c), req)
			defer c.Close()
		} else {
			resp, err = http.DefaultClient.Do(req)
		}
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", target, resp.StatusCode)
		}
	}
	if refs := rec.all(); len(refs) != 0 {
		t.Errorf("malformed requests reported as refusals: %v", refs)
	}
}

func TestParseEvent(t *testing.T) {
	t.Parallel()
	var buf strings.Builder
	ev := &eventWriter{w: &buf}
	ev.write(Event{Event: EventReady})
	ev.write(Event{Event: EventRefused, Refusal: Refusal{Host: "evil.com", Port: 443, Reason: ReasonNotAllowed}})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("lines %q", lines)
	}
	if e, ok := ParseEvent([]byte(lines[0])); !ok || e.Event != EventReady {
		t.Errorf("ready line %q parsed as %v, %v", lines[0], e, ok)
	}
	e, ok := ParseEvent([]byte(lines[1]))
	if !ok || e.Event != EventRefused || e.Host != "evil.com" || e.Port != 443 || e.Reason != ReasonNotAllowed {
		t.Errorf("refusal line %q parsed as %+v, %v", lines[1], e, ok)
	}
	for _, junk := range []string{"", "time=... level=INFO", `{"event":"other"}`, `{"event":"refused"}`} {
		if _, ok := ParseEvent([]byte(junk)); ok {
			t.Errorf("ParseEvent(%q) accepted it", junk)
		}
	}
}

// TestProxyServesOnlyItsClients: a proxy told its clients' range turns
// away anyone else, even for an allowed target.
func TestProxyServesOnlyItsClients(t *testing.T) {
	t.Parallel()
	_, up, port := upstream(t, "allowed")
	allow, _ := ParseAllow([]string{"127.0.0.1:" + itoa(port)})
	for _, tc := range []struct {
		clients []netip.Prefix
		want    int
	}{
		{clients: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, want: http.StatusForbidden},
		{clients: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.0/8")}, want: http.StatusOK},
	} {
		p := &Proxy{Guard: &Guard{Allow: allow}, Clients: tc.clients, Log: slog.New(slog.DiscardHandler)}
		srv := httptest.NewServer(p)
		u, _ := url.Parse(srv.URL)
		resp, err := proxiedClient(u).Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		srv.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("clients %v: status %d, want %d", tc.clients, resp.StatusCode, tc.want)
		}
	}
	if n := up.n.Load(); n != 1 {
		t.Errorf("upstream saw %d connections, want 1 (only the served client's)", n)
	}
}

// TestProxySendsTheAllowedHost: a plain HTTP request whose Host header
// names another site than its URL reaches the allowed host under the
// allowed name.
func TestProxySendsTheAllowedHost(t *testing.T) {
	t.Parallel()
	_, _, port := upstream(t, "allowed")
	res := &fakeResolver{answers: map[string][]string{"allowed.test": {"127.0.0.1"}}}
	proxy, _ := startProxy(t, res, "allowed.test:"+itoa(port), "127.0.0.1:"+itoa(port))
	c, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Written by hand: Go's client would put the Host in the URL too.
	fmt.Fprintf(c, "GET http://allowed.test:%d/ HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n", port)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got, want := resp.Header.Get("X-Seen-Host"), fmt.Sprintf("allowed.test:%d", port); got != want {
		t.Errorf("upstream saw Host %q, want %q", got, want)
	}
}
