package endpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// Notifications a 2026-07-28 client POSTs are answered here, not by
// mcp-go: it refuses any message without _meta's protocol version with a
// bare 400, while the official SDK sends notifications/cancelled with the
// MCP-Protocol-Version header only (and reports the failure on the
// session's next call), and mcp-go keys cancellations by session, which
// 2026-07-28 does not have (every caller's would collide). So the gateway
// keeps the 2026-07-28 requests in flight by caller and id, cancels the
// one a caller's notifications/cancelled names, and accepts every other
// notification with 202: without sessions none of them changes what the
// gateway serves.

// errCancelledByClient is the cause of a request the client cancelled.
var errCancelledByClient = errors.New("cancelled by the client (notifications/cancelled)")

type InflightKey struct{ owner, id string }

// Inflight are the 2026-07-28 requests being served.
type Inflight struct {
	mu sync.Mutex
	m  map[InflightKey]*inflightRequest
}

type inflightRequest struct{ cancel context.CancelCauseFunc }

// ModernMessage reports whether r is a 2026-07-28 (or later) message: by
// its header, else by its _meta.
func ModernMessage(r *http.Request, env Envelope) bool {
	return mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || mcp.IsModernProtocol(env.MetaProtocolVersion())
}

// requestKey is a JSON-RPC id as the same text whichever way it was
// spaced.
func requestKey(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func (f *Inflight) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		env, ok := RequestEnvelope(r.Context())
		if !ok || env.Kind == KindResponse || !ModernMessage(r, env) {
			next.ServeHTTP(w, r)
			return
		}
		owner := SessionOwner(r.Context())
		if env.Kind == KindNotification {
			if env.Method == string(mcp.MethodNotificationCancelled) {
				var p struct {
					RequestID json.RawMessage `json:"requestId"`
				}
				if len(env.Params) > 0 && json.Unmarshal(env.Params, &p) == nil && len(p.RequestID) > 0 {
					f.Cancel(InflightKey{owner, requestKey(p.RequestID)})
				}
			}
			w.WriteHeader(http.StatusAccepted)
			return
		}
		ctx, cancel := context.WithCancelCause(r.Context())
		defer cancel(nil)
		key, req := InflightKey{owner, requestKey(env.ID)}, &inflightRequest{cancel: cancel}
		f.mu.Lock()
		if f.m == nil {
			f.m = map[InflightKey]*inflightRequest{}
		}
		f.m[key] = req
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			if f.m[key] == req {
				delete(f.m, key)
			}
			f.mu.Unlock()
		}()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func (f *Inflight) Cancel(key InflightKey) {
	f.mu.Lock()
	req := f.m[key]
	f.mu.Unlock()
	if req != nil {
		req.cancel(errCancelledByClient)
	}
}
