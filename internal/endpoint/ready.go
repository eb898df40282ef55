package endpoint

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// Readiness says whether the gateway has loaded what it serves from: the
// catalog, the tool index and the stored state. /healthz is liveness (the
// process answers); /readyz answers 200 only once Ready was called, and
// 503 naming what is still loading before that and while draining. A
// request that needs what is loading (anything but initialize, ping and
// notifications) waits for it, up to MaxReadyWait, rather than being
// answered from a half-filled tool list or index.
type Readiness struct {
	ready chan struct{}
	once  sync.Once

	mu       sync.Mutex
	loading  string // what is still loading, for /readyz
	draining bool
}

// MaxReadyWait bounds how long a request waits for readiness: a start-up
// that hangs must not hang every client with it. After it the request is
// served with what is loaded.
const MaxReadyWait = 30 * time.Second

// NewReadiness returns a Readiness that is not ready yet.
func NewReadiness() *Readiness {
	return &Readiness{ready: make(chan struct{}), loading: "start-up"}
}

// Loading says what start-up waits for now.
func (r *Readiness) Loading(what string) {
	r.mu.Lock()
	r.loading = what
	r.mu.Unlock()
}

// Ready marks everything loaded: /readyz answers 200 and waiting requests
// go on.
func (r *Readiness) Ready() {
	r.once.Do(func() {
		r.mu.Lock()
		r.loading = ""
		r.mu.Unlock()
		close(r.ready)
	})
}

// Drain marks the gateway as shutting down: /readyz answers 503 so that a
// balancer sends no new clients, while requests in flight finish.
func (r *Readiness) Drain() {
	r.mu.Lock()
	r.draining = true
	r.mu.Unlock()
}

// IsReady reports whether Ready was called.
func (r *Readiness) IsReady() bool {
	select {
	case <-r.ready:
		return true
	default:
		return false
	}
}

// Wait returns once the gateway is ready, ctx ends, or MaxReadyWait has
// passed (false then).
func (r *Readiness) Wait(ctx context.Context) bool {
	if r.IsReady() {
		return true
	}
	t := time.NewTimer(MaxReadyWait)
	defer t.Stop()
	select {
	case <-r.ready:
		return true
	case <-ctx.Done():
	case <-t.C:
	}
	return false
}

// serveReadyz is /readyz.
func (r *Readiness) serveReadyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	r.mu.Lock()
	loading, draining := r.loading, r.draining
	r.mu.Unlock()
	switch {
	case draining:
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("draining\n"))
	case !r.IsReady():
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("loading: " + loading + "\n"))
	default:
		_, _ = w.Write([]byte("ready\n"))
	}
}

// waitsForReady reports whether a message must wait for readiness: the
// handshake, pings and notifications need nothing start-up loads.
func waitsForReady(env Envelope) bool {
	return env.Kind == KindRequest && env.Method != "initialize" && env.Method != "ping"
}

// gate holds the requests that need what start-up loads until it is
// loaded.
func (r *Readiness) gate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !r.IsReady() {
			if env, ok := RequestEnvelope(req.Context()); ok && waitsForReady(env) {
				r.Wait(req.Context())
			}
		}
		next.ServeHTTP(w, req)
	})
}
