package egress

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// The proxy's cost per request on loopback: compare ns/op of Direct with
// ViaProxy (plain HTTP, kept-alive connections on both legs) and with
// NewTunnel (a CONNECT and a new upstream connection per request, the
// worst case).
func BenchmarkDirect(b *testing.B) {
	srv, _, _ := upstream(b, "bench")
	client := &http.Client{Transport: &http.Transport{}}
	b.ResetTimer()
	for b.Loop() {
		get(b, client, srv.URL+"/")
	}
}

func BenchmarkViaProxy(b *testing.B) {
	srv, _, port := upstream(b, "bench")
	proxy, _ := startProxy(b, nil, "127.0.0.1:"+itoa(port))
	client := proxiedClient(proxy)
	b.ResetTimer()
	for b.Loop() {
		get(b, client, srv.URL+"/")
	}
}

func BenchmarkNewTunnel(b *testing.B) {
	_, _, port := upstream(b, "bench")
	proxy, _ := startProxy(b, nil, "127.0.0.1:"+itoa(port))
	b.ResetTimer()
	for b.Loop() {
		if status, _ := tunnelGet(b, proxy.Host, "127.0.0.1:"+itoa(port), "/"); status != 200 {
			b.Fatalf("status %d", status)
		}
	}
}

func get(b *testing.B, c *http.Client, url string) {
	resp, err := c.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("status %d", resp.StatusCode)
	}
}

// The usual case: HTTPS through one CONNECT tunnel that the client keeps
// open, against the same HTTPS server reached directly.
func BenchmarkTLSDirect(b *testing.B) {
	srv := tlsUpstream(b)
	client := srv.Client()
	b.ResetTimer()
	for b.Loop() {
		get(b, client, srv.URL+"/")
	}
}

func BenchmarkTLSViaProxy(b *testing.B) {
	srv := tlsUpstream(b)
	u, _ := url.Parse(srv.URL)
	proxy, _ := startProxy(b, nil, u.Host)
	client := srv.Client()
	client.Transport.(*http.Transport).Proxy = http.ProxyURL(proxy)
	b.ResetTimer()
	for b.Loop() {
		get(b, client, srv.URL+"/")
	}
}

func tlsUpstream(b *testing.B) *httptest.Server {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello")
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkNewConnDirect is NewTunnel's baseline: a new connection per
// request, no proxy.
func BenchmarkNewConnDirect(b *testing.B) {
	srv, _, _ := upstream(b, "bench")
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	b.ResetTimer()
	for b.Loop() {
		get(b, client, srv.URL+"/")
	}
}
