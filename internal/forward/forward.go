// Package forward lets any replica of an instance serve any request
// behind a plain round-robin balancer. A 2026-07-28 request is stateless
// and served where it lands; what lives in one replica's memory (a
// 2025-11-25 session, a continuation, a multi round-trip call waiting for
// its client's answers) has an id that names the replica holding it (ID),
// and a request that carries such an id and lands on another replica is
// passed over HTTP to the owner's advertised URL (Router.Middleware),
// streaming answers included; the client notices nothing. When the owner
// is gone (no live membership row, or it cannot be reached) the request is
// served where it landed, which answers as for any unknown id: 404 for a
// session, "expired" for a continuation or a requestState.
package forward

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mcp-hangar/hangar/internal/store"
)

// Header marks a forwarded request with the replica that forwarded it: a
// request carrying it is served where it arrives, never forwarded again.
const Header = "X-Hangar-Forwarded-By"

// ProofHeader carries the forwarding replica's proof that it is one
// (Router.Trusted): an HMAC of its name under the instance's shared key.
const ProofHeader = "X-Hangar-Forward-Proof"

// sep ends an id's random part and starts its owner's name: it is in no
// base32 or hex random part and in no replica name (instance.CheckReplica),
// and is a visible ASCII character, as a session id must be.
const sep = "~"

// ID is the id random gets on replica: random itself without replicas
// (replica ""), else random, sep and the replica's name.
func ID(random, replica string) string {
	if replica == "" {
		return random
	}
	return random + sep + replica
}

// Owner is the replica an id names, "" when it names none.
func Owner(id string) string {
	i := strings.LastIndex(id, sep)
	if i < 0 {
		return ""
	}
	return id[i+len(sep):]
}

// sessionHeader is the 2025-11-25 session id header (mcp-go's
// server.HeaderKeySessionID).
const sessionHeader = "Mcp-Session-Id"

// Router forwards the requests of ids owned by other replicas.
type Router struct {
	// Self is this replica's name.
	Self string
	// Key is the instance's shared key (store.Postgres.SharedKey): a
	// request that proves it was forwarded by a replica was counted
	// against the rate limits there (Trusted).
	Key []byte
	// Members lists the instance's replicas (store.Members.Members).
	Members func(ctx context.Context) ([]store.Member, error)
	// Live is how old a heartbeat may be for its replica to count as live.
	Live time.Duration
	// Peek bounds the request body read (before the caller is
	// authenticated) to find an id in it (default 1 MiB): a bigger one
	// is forwarded only for its session header, else served here.
	Peek int64
	Log  *slog.Logger

	once  sync.Once
	proxy *httputil.ReverseProxy

	mu      sync.Mutex
	members map[string]store.Member // by replica, as of readAt
	readAt  time.Time
}

// dialTimeout bounds connecting to the owner: one that does not answer
// is treated as gone.
const dialTimeout = 5 * time.Second

// membersFresh is how long a read of the membership rows is used: the
// rows change at joins, leaves and heartbeats (seconds apart), and a
// forward must not cost a store read.
const membersFresh = time.Second

// ownerKey carries a forwarded request's target to the reverse proxy's
// Rewrite: httputil.ReverseProxy hands it the incoming request, nothing
// else.
type ownerKey struct{}

func (f *Router) init() {
	f.once.Do(func() {
		if f.Log == nil {
			f.Log = slog.Default()
		}
		f.proxy = &httputil.ReverseProxy{
			// Replicas talk directly (no $HTTP_PROXY), on a pool of their own.
			Transport: &http.Transport{
				DialContext:         (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
				MaxIdleConnsPerHost: 64,
				IdleConnTimeout:     90 * time.Second,
			},
			Rewrite: func(pr *httputil.ProxyRequest) {
				target := pr.In.Context().Value(ownerKey{}).(*url.URL)
				pr.SetURL(target)
				pr.Out.URL.Path = pr.In.URL.Path // the advertised URL names the host, the request its path
				pr.Out.URL.RawPath = pr.In.URL.RawPath
				pr.Out.Header.Set(Header, f.Self)
				pr.Out.Header.Set(ProofHeader, f.proof(f.Self))
				// Authorization, Mcp-Session-Id, MCP-Protocol-Version and the
				// rest pass on as they came: the owner authenticates the
				// caller itself.
			},
			// Server-Sent Events: every event is passed on at once.
			FlushInterval: -1,
			ErrorHandler:  f.unreachable,
		}
	})
}

// proof is replica's proof of being one of the instance's.
func (f *Router) proof(replica string) string {
	m := hmac.New(sha256.New, f.Key)
	m.Write([]byte("hangar forward\x00" + replica))
	return hex.EncodeToString(m.Sum(nil))
}

// Trusted reports whether r was forwarded by another replica of the
// instance (not merely marked so by a client): its rate limits were
// applied there.
func (f *Router) Trusted(r *http.Request) bool {
	by, proof := r.Header.Get(Header), r.Header.Get(ProofHeader)
	if len(f.Key) == 0 || by == "" || proof == "" {
		return false
	}
	return hmac.Equal([]byte(proof), []byte(f.proof(by)))
}

// Middleware passes a request that names another live replica's id to that
// replica, and every other request to next.
func (f *Router) Middleware(next http.Handler) http.Handler {
	f.init()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(Header) != "" {
			next.ServeHTTP(w, r)
			return
		}
		owner := Owner(r.Header.Get(sessionHeader))
		var body []byte
		replayable := true
		if r.Method == http.MethodPost && r.Body != nil {
			body, replayable = f.read(r)
			if replayable && (owner == "" || owner == f.Self) {
				owner = ownerIn(body)
			}
		}
		if owner == "" || owner == f.Self {
			next.ServeHTTP(w, r)
			return
		}
		target, ok := f.lookup(r.Context(), owner)
		if !ok {
			// Gone: the id is unknown here, and answered so.
			next.ServeHTTP(w, r)
			return
		}
		ctx := context.WithValue(r.Context(), ownerKey{}, target)
		ctx = context.WithValue(ctx, fallbackKey{}, fallback{next: next, in: r, body: body, replayable: replayable})
		fr := r.WithContext(ctx)
		if replayable {
			fr.Body = replay(body)
		}
		f.proxy.ServeHTTP(w, fr)
	})
}

// fallbackKey carries what the proxy's ErrorHandler needs to serve a
// failed forward here instead: httputil.ReverseProxy hands it the request
// only.
type fallbackKey struct{}

// fallback serves a request whose owner could not be reached here.
type fallback struct {
	next http.Handler
	in   *http.Request // as it came (the proxy's error handler gets its copy)
	body []byte
	// replayable: body is all of it (a bigger one went to the proxy as
	// it came, and is gone).
	replayable bool
}

// unreachable serves a request here when its owner could not be reached
// (it died before its heartbeat went stale): the id is unknown here, and
// the caller gets the answer for an unknown id, as when the owner is gone.
func (f *Router) unreachable(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(r.Context().Err(), context.Canceled) {
		return // the caller went away
	}
	fb := r.Context().Value(fallbackKey{}).(fallback)
	if !fb.replayable {
		f.Log.Warn("owner replica unreachable", "error", err, "path", r.URL.Path)
		http.Error(w, "Bad Gateway: the gateway replica holding this session does not answer; send initialize to start a new one",
			http.StatusBadGateway)
		return
	}
	f.Log.Warn("owner replica unreachable; served here as an unknown id", "error", err, "path", r.URL.Path)
	in := fb.in.Clone(fb.in.Context())
	in.Body = replay(fb.body)
	fb.next.ServeHTTP(w, in)
}

// read reads r's body up to Peek and puts it back; whole is false when
// it is bigger (r.Body then reads all of it, as it came).
func (f *Router) read(r *http.Request) (body []byte, whole bool) {
	limit := f.Peek
	if limit <= 0 {
		limit = 1 << 20
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil || int64(len(b)) > limit {
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), r.Body), r.Body}
		return nil, false
	}
	_ = r.Body.Close()
	r.Body = replay(b)
	return b, true
}

func replay(b []byte) io.ReadCloser {
	if b == nil {
		return http.NoBody
	}
	return io.NopCloser(bytes.NewReader(b))
}

// ownerIn is the replica named by a tools/call's requestState or its
// continuation_id argument, "" when none.
func ownerIn(body []byte) string {
	if !bytes.Contains(body, []byte(sep)) {
		return "" // no id of another replica: not worth decoding
	}
	var m struct {
		Method string `json:"method"`
		Params struct {
			RequestState string `json:"requestState"`
			Arguments    struct {
				ContinuationID any `json:"continuation_id"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil || m.Method != "tools/call" {
		return ""
	}
	if o := Owner(m.Params.RequestState); o != "" {
		return o
	}
	if id, ok := m.Params.Arguments.ContinuationID.(string); ok {
		return Owner(id)
	}
	return ""
}

// lookup is the advertised URL of replica when it is live.
func (f *Router) lookup(ctx context.Context, replica string) (*url.URL, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if time.Since(f.readAt) > membersFresh {
		// Not the caller's: one that goes away does not fail the read the
		// next requests wait for.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dialTimeout)
		ms, err := f.Members(rctx)
		cancel()
		if err != nil {
			f.Log.Warn("replica membership not read; requests for other replicas' ids are served here", "error", err)
		} else {
			f.members = make(map[string]store.Member, len(ms))
			for _, m := range ms {
				f.members[m.Replica] = m
			}
			f.readAt = time.Now()
		}
	}
	m, ok := f.members[replica]
	if !ok || m.AdvertiseURL == "" || time.Since(m.HeartbeatAt) >= f.Live {
		return nil, false
	}
	u, err := url.Parse(m.AdvertiseURL)
	if err != nil || u.Host == "" {
		return nil, false
	}
	return u, true
}
