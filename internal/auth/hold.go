package auth

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// A stream (an SSE GET, /events, a subscriptions/listen answer) outlives
// the authentication of the request that opened it. Hold ties it to its
// credential: the stream's context ends when the credential expires or a
// reload removes it or changes what it grants, so a revoked token stops
// receiving at once rather than when the client reconnects.

// hold is one stream held open by the credential in hdr.
type hold struct {
	hdr    http.Header // the request's headers: the credential, read again on reload
	id     Identity
	cancel context.CancelFunc

	mu    sync.Mutex
	timer *time.Timer // ends the stream when the credential expires; nil: never
}

// expireAt sets when the stream ends: a reload may move a token's
// expires_at without changing what it grants.
func (hd *hold) expireAt(at time.Time) {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	if hd.timer != nil {
		hd.timer.Stop()
		hd.timer = nil
	}
	if !at.IsZero() {
		hd.timer = time.AfterFunc(time.Until(at), hd.cancel)
	}
}

// Hold returns a context derived from r's that ends when the credential r
// was let in with stops being valid: at its expiry, or when a reload no
// longer authenticates it to the same identity with the same grants.
// release frees what the hold keeps; call it when the stream ends.
// Every held stream also ends at EndStreams.
func (h *HTTP) Hold(r *http.Request) (ctx context.Context, release func()) {
	ctx, cancelCtx := context.WithCancel(r.Context())
	unhook := context.AfterFunc(h.shutdownCtx(), cancelCtx)
	cancel := func() { unhook(); cancelCtx() }
	id, ok := FromContext(r.Context())
	if !ok {
		return ctx, cancel
	}
	hd := &hold{hdr: r.Header.Clone(), id: id, cancel: cancel}
	hd.expireAt(id.Expires)
	h.holdMu.Lock()
	if h.holds == nil {
		h.holds = map[*hold]struct{}{}
	}
	h.holds[hd] = struct{}{}
	h.holdMu.Unlock()
	return ctx, func() {
		hd.expireAt(time.Time{})
		h.holdMu.Lock()
		delete(h.holds, hd)
		h.holdMu.Unlock()
		cancel()
	}
}

// EndStreams ends every held stream, and every one opened from now on: the
// gateway is shutting down, and a stream does not end by itself, so a
// graceful shutdown would otherwise wait its whole drain time for it while
// the calls in flight finish.
func (h *HTTP) EndStreams() {
	h.shutdownCtx()
	h.holdMu.Lock()
	end := h.endStreams
	h.holdMu.Unlock()
	end()
}

// shutdownCtx is the context EndStreams cancels.
func (h *HTTP) shutdownCtx() context.Context {
	h.holdMu.Lock()
	defer h.holdMu.Unlock()
	if h.shutdown == nil {
		h.shutdown, h.endStreams = context.WithCancel(context.Background())
	}
	return h.shutdown
}

// Holds is how many streams are held open by a credential now.
func (h *HTTP) Holds() int {
	h.holdMu.Lock()
	defer h.holdMu.Unlock()
	return len(h.holds)
}

// recheck ends the held streams whose credential cur no longer grants
// what it granted when the stream opened.
func (h *HTTP) recheck(cur Settings) {
	h.holdMu.Lock()
	held := make([]*hold, 0, len(h.holds))
	for hd := range h.holds {
		held = append(held, hd)
	}
	h.holdMu.Unlock()
	// A JWT is verified against a key set the verifier has cached; the
	// bound keeps a reload from waiting long on an identity provider.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, hd := range held {
		id, _, reason, _ := h.authenticate(ctx, hd.hdr, cur)
		if reason != "" || !sameGrant(id, hd.id) {
			h.log().Info("stream ended: its credential was removed or changed by a reload", "identity", hd.id.Name)
			hd.cancel()
			continue
		}
		hd.expireAt(id.Expires)
	}
}

// sameGrant reports whether a and b are one identity with the same grants
// (its expiry aside: a moved expires_at moves the stream's end).
func sameGrant(a, b Identity) bool {
	return a.Kind == b.Kind && a.Name == b.Name && a.ViewKey() == b.ViewKey()
}
