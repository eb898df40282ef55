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
//
// A forwarded request carries a proof of that one request (ProofHeader):
// an HMAC, under a key derived from the instance's keystore key, of the
// sending and the receiving replica, the method, the request URI, the
// body's digest, the time and a nonce. The receiver (Router.Check) refuses
// a proof more than Window away from its clock, made for another request
// or replica, or whose nonce it accepted before: a proof captured on the
// replica network cannot be used again.
package forward

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-hangar/hangar/internal/store"
)

// Header marks a forwarded request with the replica that forwarded it: a
// request carrying it is served where it arrives, never forwarded again.
const Header = "X-Hangar-Forwarded-By"

// ProofHeader carries the forwarding replica's proof of the request it
// forwards (Router.Check): "t=<unix seconds>;n=<nonce>;s=<HMAC, hex>".
const ProofHeader = "X-Hangar-Forward-Proof"

// Window is how far the time in a proof may be from the receiving
// replica's clock (either way: the replicas' clocks may differ a little).
const Window = 30 * time.Second

// Why Router.Check refuses a request marked as forwarded: the reason in
// its audit entry and log line ("forward_refused: <reason>"). None names
// a secret or the proof.
const (
	// RefusedMissing: the request names a forwarding replica but carries
	// no proof, or a proof but no replica.
	RefusedMissing = "proof_missing"
	// RefusedMalformed: the proof is not in ProofHeader's format.
	RefusedMalformed = "proof_malformed"
	// RefusedExpired: the proof's time is more than Window away.
	RefusedExpired = "proof_expired"
	// RefusedInvalid: the proof was not made with the instance's key for
	// this request, from that replica to this one.
	RefusedInvalid = "proof_invalid"
	// RefusedReplayed: the proof's nonce was accepted before.
	RefusedReplayed = "proof_replayed"
	// RefusedTooMany: more forwarded requests within the window than this
	// replica remembers nonces of (it refuses rather than forget one).
	RefusedTooMany = "proof_nonces_full"
	// RefusedBody: the body is over the bound a forward may carry.
	RefusedBody = "proof_body_too_large"
	// RefusedNoKey: this replica has no forwarding key to check with.
	RefusedNoKey = "proof_unverifiable"
)

// proofVersion starts the signed text: a later format signs another.
const proofVersion = "hangar forward v2"

// maxNonces bounds the nonces a replica remembers (those of the proofs it
// accepted, each until its proof expires): about 10 MiB at most, room for
// over 4,000 forwarded requests a second to one replica.
const maxNonces = 1 << 18

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
	// Key signs and checks proofs: derived from the instance's keystore
	// key (store DerivedKey), the same on every replica. A request that
	// proves it was forwarded by a replica was counted against the rate
	// limits there (Check). Without a key nothing is forwarded, and a
	// request marked as forwarded is refused.
	Key []byte
	// Members lists the instance's replicas (store.Members.Members).
	Members func(ctx context.Context) ([]store.Member, error)
	// Live is how old a heartbeat may be for its replica to count as live.
	Live time.Duration
	// MaxBody bounds a body read to find an id in it, to sign it or to
	// check its proof (the endpoint's bound; default 16 MiB): a bigger
	// one is served where it lands, which refuses it as too large.
	MaxBody int64
	Log     *slog.Logger
	// Now is the clock of proofs (default time.Now).
	Now func() time.Time
	// Reached, when set, is told of every forward: whether the owner
	// answered (metrics).
	Reached func(ok bool)

	once   sync.Once
	proxy  *httputil.ReverseProxy
	nonces nonces

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

// targetKey carries a forwarded request's target to the reverse proxy's
// Rewrite: httputil.ReverseProxy hands it the incoming request, nothing
// else.
type targetKey struct{}

// target is where a request goes and what its proof signs.
type target struct {
	url   *url.URL
	owner string
	body  []byte
}

func (f *Router) init() {
	f.once.Do(func() {
		if f.Log == nil {
			f.Log = slog.Default()
		}
		if f.Now == nil {
			f.Now = time.Now
		}
		if f.MaxBody <= 0 {
			f.MaxBody = 16 << 20
		}
		f.nonces.max = maxNonces
		f.proxy = &httputil.ReverseProxy{
			// Replicas talk directly (no $HTTP_PROXY), on a pool of their own.
			Transport: &http.Transport{
				DialContext:         (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
				MaxIdleConnsPerHost: 64,
				IdleConnTimeout:     90 * time.Second,
			},
			Rewrite: func(pr *httputil.ProxyRequest) {
				t := pr.In.Context().Value(targetKey{}).(target)
				pr.SetURL(t.url)
				pr.Out.URL.Path = pr.In.URL.Path // the advertised URL names the host, the request its path
				pr.Out.URL.RawPath = pr.In.URL.RawPath
				pr.Out.Header.Set(Header, f.Self)
				pr.Out.Header.Set(ProofHeader, f.prove(t.owner, pr.Out.Method, pr.Out.URL.RequestURI(), t.body))
				// Authorization, Mcp-Session-Id, MCP-Protocol-Version and the
				// rest pass on as they came: the owner authenticates the
				// caller itself.
			},
			ModifyResponse: func(*http.Response) error {
				if f.Reached != nil {
					f.Reached(true)
				}
				return nil
			},
			// Server-Sent Events: every event is passed on at once.
			FlushInterval: -1,
			ErrorHandler:  f.unreachable,
		}
	})
}

// prove is the proof of a request this replica forwards to replica to.
func (f *Router) prove(to, method, uri string, body []byte) string {
	n := make([]byte, 16)
	_, _ = rand.Read(n) // crypto/rand.Read never fails on supported platforms
	nonce := base64.RawURLEncoding.EncodeToString(n)
	at := f.Now().Unix()
	return "t=" + strconv.FormatInt(at, 10) + ";n=" + nonce + ";s=" + f.sign(f.Self, to, method, uri, body, at, nonce)
}

// sign is the HMAC of one forward under Key. Every field but the body's
// digest is free of newlines (replica names, a method, a request URI as
// sent, digits, base64url), so the text cannot be read two ways.
func (f *Router) sign(from, to, method, uri string, body []byte, at int64, nonce string) string {
	d := sha256.Sum256(body)
	m := hmac.New(sha256.New, f.Key)
	fmt.Fprintf(m, "%s\n%s\n%s\n%s\n%s\n%x\n%d\n%s", proofVersion, from, to, method, uri, d, at, nonce)
	return hex.EncodeToString(m.Sum(nil))
}

// parseProof splits a ProofHeader value; ok is false when it is not one.
func parseProof(v string) (at int64, nonce, sig string, ok bool) {
	parts := strings.Split(v, ";")
	if len(parts) != 3 || !strings.HasPrefix(parts[0], "t=") || !strings.HasPrefix(parts[1], "n=") || !strings.HasPrefix(parts[2], "s=") {
		return 0, "", "", false
	}
	at, err := strconv.ParseInt(parts[0][2:], 10, 64)
	nonce, sig = parts[1][2:], parts[2][2:]
	if err != nil || len(nonce) != 22 || len(sig) != 2*sha256.Size {
		return 0, "", "", false
	}
	if b, err := base64.RawURLEncoding.DecodeString(nonce); err != nil || len(b) != 16 {
		return 0, "", "", false
	}
	if _, err := hex.DecodeString(sig); err != nil {
		return 0, "", "", false
	}
	return at, nonce, sig, true
}

// Check tells whether r was forwarded by another replica of the instance,
// proven: its rate limits were applied there. A request not marked as
// forwarded is not (forwarded false, refusal ""); one marked as forwarded
// whose proof does not hold is refused (refusal is one of the Refused*
// reasons), and must not be served. Check reads the body to check its
// digest and puts it back.
func (f *Router) Check(r *http.Request) (forwarded bool, refusal string) {
	f.init()
	by, proof := r.Header.Get(Header), r.Header.Get(ProofHeader)
	switch {
	case by == "" && proof == "":
		return false, ""
	case by == "" || proof == "":
		return false, RefusedMissing
	case len(f.Key) == 0:
		return false, RefusedNoKey
	}
	at, nonce, sig, ok := parseProof(proof)
	if !ok {
		return false, RefusedMalformed
	}
	now := f.Now()
	if d := now.Sub(time.Unix(at, 0)); d > Window || d < -Window {
		return false, RefusedExpired
	}
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		b, err := io.ReadAll(io.LimitReader(r.Body, f.MaxBody+1))
		_ = r.Body.Close()
		r.Body = replay(b)
		if err != nil || int64(len(b)) > f.MaxBody {
			return false, RefusedBody
		}
		body = b
	}
	want := f.sign(by, f.Self, r.Method, r.URL.RequestURI(), body, at, nonce)
	if !hmac.Equal([]byte(sig), []byte(want)) {
		return false, RefusedInvalid
	}
	// Only a proof made with the key takes a place among the nonces: a
	// caller without it cannot fill them.
	var n [16]byte
	_, _ = base64.RawURLEncoding.Decode(n[:], []byte(nonce))
	switch f.nonces.use(n, time.Unix(at, 0).Add(Window), now) {
	case nonceReplayed:
		return false, RefusedReplayed
	case nonceFull:
		return false, RefusedTooMany
	}
	return true, ""
}

// nonces are the nonces of the proofs a replica accepted, each until its
// proof expires: a nonce is good once.
type nonces struct {
	mu    sync.Mutex
	max   int
	until map[[16]byte]int64 // unix nanoseconds
	swept time.Time
}

const (
	nonceFresh = iota
	nonceReplayed
	nonceFull
)

// use records nonce, good until until, and tells whether it was fresh.
func (n *nonces) use(nonce [16]byte, until, now time.Time) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.until == nil {
		n.until = map[[16]byte]int64{}
	}
	if _, seen := n.until[nonce]; seen {
		return nonceReplayed
	}
	// Expired nonces go once a second, or at once when there is no room.
	if len(n.until) >= n.max || now.Sub(n.swept) >= time.Second {
		for k, u := range n.until {
			if u <= now.UnixNano() {
				delete(n.until, k)
			}
		}
		n.swept = now
	}
	if len(n.until) >= n.max {
		return nonceFull
	}
	n.until[nonce] = until.UnixNano()
	return nonceFresh
}

// CheckAdvertiseURL tells whether u can be a replica's advertise URL: an
// http or https URL whose host the other replicas can dial. A wildcard
// host (0.0.0.0, ::, none) is the address a replica listens on, not one
// it is reached at: the others would send its requests to themselves.
func CheckAdvertiseURL(u string) error {
	_, err := parseAdvertiseURL(u)
	return err
}

// parseAdvertiseURL is CheckAdvertiseURL that also returns the URL.
func parseAdvertiseURL(u string) (*url.URL, error) {
	p, err := url.Parse(u)
	if err != nil {
		return nil, fmt.Errorf("advertise URL %q: %w", u, err)
	}
	if p.Scheme != "http" && p.Scheme != "https" {
		return nil, fmt.Errorf("advertise URL %q: want an http:// or https:// URL", u)
	}
	host := p.Hostname()
	if a, err := netip.ParseAddr(host); host == "" || err == nil && a.IsUnspecified() {
		return nil, fmt.Errorf("advertise URL %q names no address the other replicas can reach (%q is a wildcard): "+
			"set --advertise-url (or $HANGAR_ADVERTISE_URL) to this replica's own name or address, "+
			"e.g. http://{{.Task.Name}}:8080 in a Swarm stack", u, host)
	}
	return p, nil
}

// Middleware passes a request that names another live replica's id to that
// replica, and every other request to next. A request another replica
// forwarded (proven by Check, before) is served here, never forwarded again.
func (f *Router) Middleware(next http.Handler) http.Handler {
	f.init()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(Header) != "" || len(f.Key) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		owner := Owner(r.Header.Get(sessionHeader))
		var body []byte
		if r.Body != nil && r.Body != http.NoBody {
			var whole bool
			if body, whole = f.read(r); !whole {
				// Too big to be served anywhere: refused here.
				next.ServeHTTP(w, r)
				return
			}
			if r.Method == http.MethodPost && (owner == "" || owner == f.Self) {
				owner = ownerIn(body)
			}
		}
		if owner == "" || owner == f.Self {
			next.ServeHTTP(w, r)
			return
		}
		u, ok := f.lookup(r.Context(), owner)
		if !ok {
			// Gone: the id is unknown here, and answered so.
			next.ServeHTTP(w, r)
			return
		}
		ctx := context.WithValue(r.Context(), targetKey{}, target{url: u, owner: owner, body: body})
		ctx = context.WithValue(ctx, fallbackKey{}, fallback{next: next, in: r, body: body})
		fr := r.WithContext(ctx)
		fr.Body = replay(body)
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
}

// unreachable serves a request here when its owner could not be reached
// (it died before its heartbeat went stale): the id is unknown here, and
// the caller gets the answer for an unknown id, as when the owner is gone.
func (f *Router) unreachable(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(r.Context().Err(), context.Canceled) {
		return // the caller went away
	}
	if f.Reached != nil {
		f.Reached(false)
	}
	fb := r.Context().Value(fallbackKey{}).(fallback)
	f.Log.Warn("owner replica unreachable; served here as an unknown id", "error", err, "path", r.URL.Path)
	in := fb.in.Clone(fb.in.Context())
	in.Body = replay(fb.body)
	fb.next.ServeHTTP(w, in)
}

// read reads r's body up to MaxBody and puts it back; whole is false when
// it is bigger (r.Body then reads all of it, as it came).
func (f *Router) read(r *http.Request) (body []byte, whole bool) {
	b, err := io.ReadAll(io.LimitReader(r.Body, f.MaxBody+1))
	if err != nil || int64(len(b)) > f.MaxBody {
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
	if !ok || time.Since(m.HeartbeatAt) >= f.Live {
		return nil, false
	}
	u, err := parseAdvertiseURL(m.AdvertiseURL)
	return u, err == nil
}
