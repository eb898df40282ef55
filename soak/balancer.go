package soak

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// balancer is a round-robin reverse proxy over the replicas, as an
// operator's load balancer would be: each request goes to the next live
// replica; a replica whose /readyz fails (checked every interval) or that
// refuses a connection is taken out until /readyz answers again; a
// request whose connection was refused is sent to the next replica
// (nothing of it reached the first). Answers are streamed (SSE).
type balancer struct {
	srv      *http.Server
	ln       net.Listener
	backends func() []string
	next     atomic.Uint64
	mu       sync.Mutex
	down     map[string]bool
	proxy    *httputil.ReverseProxy
	stop     context.CancelFunc
	done     chan struct{}
}

type backendKey struct{}

func startBalancer(backends func() []string) (*balancer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &balancer{ln: ln, backends: backends, down: map[string]bool{}, done: make(chan struct{})}
	b.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			u, _ := url.Parse(r.In.Context().Value(backendKey{}).(string))
			r.SetURL(u)
			r.Out.Host = r.In.Host
		},
		FlushInterval: -1,
		Transport:     &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second},
		ErrorLog:      log.New(io.Discard, "", 0), // a replica killed mid-answer is what the harness does
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	b.srv = &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	b.stop = cancel
	go func() { _ = b.srv.Serve(ln) }()
	go b.check(ctx)
	return b, nil
}

// URL is the balanced /mcp endpoint.
func (b *balancer) URL() string { return "http://" + b.ln.Addr().String() + "/mcp" }

func (b *balancer) live() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, u := range b.backends() {
		if !b.down[u] {
			out = append(out, u)
		}
	}
	return out
}

func (b *balancer) setDown(u string, down bool) {
	b.mu.Lock()
	b.down[u] = down
	b.mu.Unlock()
}

func (b *balancer) check(ctx context.Context) {
	defer close(b.done)
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		for _, u := range b.backends() {
			b.setDown(u, !ready(ctx, u))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The body is read once so that a request refused at connect can go
	// to the next replica.
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = readAll(r); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	live := b.live()
	if len(live) == 0 {
		http.Error(w, "no live replica", http.StatusServiceUnavailable)
		return
	}
	start := int(b.next.Add(1))
	for i := range live {
		u := live[(start+i)%len(live)]
		if i < len(live)-1 && !b.reachable(u) {
			b.setDown(u, true)
			continue
		}
		r2 := r.Clone(context.WithValue(r.Context(), backendKey{}, u))
		r2.Body = newBody(body)
		r2.ContentLength = int64(len(body))
		b.proxy.ServeHTTP(w, r2)
		return
	}
}

// reachable dials the replica: a refused connection means it is down
// (killed), and the request goes to the next one.
func (b *balancer) reachable(u string) bool {
	pu, err := url.Parse(u)
	if err != nil {
		return false
	}
	c, err := net.DialTimeout("tcp", pu.Host, time.Second)
	if err != nil {
		return !errors.Is(err, syscall.ECONNREFUSED)
	}
	c.Close()
	return true
}

func (b *balancer) Close() {
	b.stop()
	<-b.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = b.srv.Shutdown(ctx)
	b.srv.Close()
}

// maxBody bounds a request body the balancer holds.
const maxBody = 8 << 20

func readAll(r *http.Request) ([]byte, error) {
	defer r.Body.Close()
	return io.ReadAll(io.LimitReader(r.Body, maxBody))
}

func newBody(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }
