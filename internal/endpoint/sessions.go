package endpoint

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/forward"
)

// Streamable HTTP sessions (MCP up to 2025-11-25) are kept here, not in
// mcp-go: its default session manager accepts any well-formed made-up id,
// ignores DELETE, and a GET with an unknown id creates a session. The table
// below is the one source of truth: it mints ids (crypto/rand), binds each
// to the identity that opened it, bounds their number, expires idle ones,
// and answers 404 for an id it does not hold for this caller. mcp-go sees
// it through a SessionIdManager and only ever gets requests for sessions
// the table vouched for. Between a session's requests mcp-go holds only a
// small object of the table's for it (mcpsession.go). MCP 2026-07-28 has
// no sessions: those requests pass untouched.

// AnonymousOwner owns the sessions of callers without an identity.
const AnonymousOwner = "anonymous"

// errSessionsFull is the refusal of a new session when max_sessions are open.
var errSessionsFull = errors.New("session limit reached")

// errOwnSessionsBusy refuses a new session to a caller who holds
// max_sessions_per_identity sessions, every one of them in use.
var errOwnSessionsBusy = errors.New("every session of this identity is in use")

// SessionGrant is what the request's identity grants ("" without one).
func SessionGrant(ctx context.Context) string {
	if id, ok := auth.FromContext(ctx); ok {
		return id.ViewKey()
	}
	return ""
}

// SessionOwner is who a request's sessions belong to.
func SessionOwner(ctx context.Context) string {
	id, ok := auth.FromContext(ctx)
	if !ok || id.Kind == auth.KindAnonymous {
		return AnonymousOwner
	}
	return id.Kind + ":" + id.Name
}

type Session struct {
	owner string
	// grant is what the owner's identity granted when the session began
	// (auth.Identity.ViewKey): a reload that changes it ends the session,
	// so nothing filtered by the old grant (its notifications, say)
	// outlives it.
	grant      string
	lastActive time.Time
	// busy counts requests and GET streams in flight: a session serving
	// one is not idle, however long the call takes.
	busy    int
	streams map[*context.CancelFunc]struct{}

	// mcp is what mcp-go holds of the session between requests
	// (mcpsession.go); nil when mcp-go holds its own.
	mcp *mcpSession
	// hand serialises taking mcp out of mcp-go for GET streams and
	// putting it back; gets counts those streams, registered says
	// whether mcp-go holds mcp now (both guarded by hand).
	hand       sync.Mutex
	gets       int
	registered bool
}

// SessionTable holds the open sessions.
type SessionTable struct {
	max int
	// perOwner bounds one identity's sessions, so that one caller (a
	// client that never sends DELETE, say) cannot take the whole table.
	perOwner int
	ttl      time.Duration
	log      *slog.Logger
	// Release frees what mcp-go holds for an ended session (an internal
	// DELETE through the streamable server); set once before serving.
	Release func(id string)
	// Refused, when set, records an initialize Refused for the limits
	// (429, 503) in the audit trail; set once before serving.
	Refused func(r *http.Request, f auth.Refusal)
	// MCP, when set, is the MCP server whose sessions the table keeps
	// small between requests (mcpsession.go); set once before serving,
	// with SessionInitialized and SessionRegistered among its hooks and
	// HTTPContext as the streamable server's context func.
	MCP *server.MCPServer

	mu       sync.Mutex
	byID     map[string]*Session
	reserved int // initialize requests between the capacity check and Generate
	// reservedBy counts reserved by owner.
	reservedBy map[string]int
	sweeping   bool // the sweeper goroutine runs while sessions exist
	stop       chan struct{}
	closed     bool

	// Replica is named in every id (forward.ID); "" without replicas.
	// Set it before the table mints any.
	Replica string
}

func NewSessionTable(max, perOwner int, ttl time.Duration, log *slog.Logger) *SessionTable {
	if perOwner <= 0 || perOwner > max {
		perOwner = max
	}
	return &SessionTable{max: max, perOwner: perOwner, ttl: ttl, log: log, byID: map[string]*Session{},
		reservedBy: map[string]int{}, stop: make(chan struct{})}
}

// reservation holds a slot for an initialize request until mcp-go asks
// for the session id (Generate), or gives it back.
type reservation struct {
	t     *SessionTable
	owner string
	used  bool // guarded by t.mu
	// session is the one minted on the reservation (guarded by t.mu).
	session *Session
}

// reserve holds a slot for a new session of owner's. When owner already
// holds its limit, its least recently active idle session ends to make
// room, so clients that never send DELETE keep working; when every one of
// them is in use, the new one is refused.
func (t *SessionTable) reserve(owner string) (*reservation, error) {
	t.mu.Lock()
	if len(t.byID)+t.reserved >= t.max {
		expired := t.expiredLocked(time.Now())
		t.mu.Unlock()
		t.free(expired)
		t.mu.Lock()
	}
	if held, oldest := t.heldLocked(owner); held >= t.perOwner {
		if oldest == "" {
			t.mu.Unlock()
			return nil, errOwnSessionsBusy
		}
		cancels := t.endLocked(oldest)
		t.mu.Unlock()
		for _, c := range cancels {
			c()
		}
		t.log.Info("session ended to make room for a new one of the same identity",
			"max_sessions_per_identity", t.perOwner)
		if t.Release != nil {
			t.Release(oldest)
		}
		t.mu.Lock()
	}
	defer t.mu.Unlock()
	if len(t.byID)+t.reserved >= t.max {
		return nil, errSessionsFull
	}
	if held, _ := t.heldLocked(owner); held >= t.perOwner {
		return nil, errOwnSessionsBusy // this caller's other initializes took the room meanwhile
	}
	t.reserved++
	t.reservedBy[owner]++
	return &reservation{t: t, owner: owner}, nil
}

// heldLocked counts owner's sessions and reservations, and names its
// least recently active session that serves nothing now ("" if none).
// Initialize is rare enough for a scan.
func (t *SessionTable) heldLocked(owner string) (held int, oldestIdle string) {
	var at time.Time
	for id, s := range t.byID {
		if s.owner != owner {
			continue
		}
		held++
		if s.busy == 0 && (oldestIdle == "" || s.lastActive.Before(at)) {
			oldestIdle, at = id, s.lastActive
		}
	}
	return held + t.reservedBy[owner], oldestIdle
}

// useLocked gives a reservation's slot back (to a session, or for good).
func (r *reservation) useLocked() {
	if r.used {
		return
	}
	r.used = true
	r.t.reserved--
	if r.t.reservedBy[r.owner]--; r.t.reservedBy[r.owner] <= 0 {
		delete(r.t.reservedBy, r.owner)
	}
}

func (r *reservation) release() {
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	r.useLocked()
}

// create mints a session for owner with grant, using res's slot when it
// has one. With t.MCP, mcp-go is given the session's mcpSession before it
// could register a session object of its own; ctx is the initialize
// request's, for the register hooks.
func (t *SessionTable) create(ctx context.Context, owner, grant string, res *reservation) string {
	id := forward.ID(rand.Text(), t.Replica) // 26 base32 characters: 130 bits from the CSPRNG
	s := &Session{owner: owner, grant: grant, lastActive: time.Now()}
	if t.MCP != nil {
		s.mcp = &mcpSession{id: id}
		s.registered = true
	}
	t.mu.Lock()
	if res != nil && res.t == t {
		res.useLocked()
		res.session = s
	}
	t.byID[id] = s
	if !t.sweeping && !t.closed {
		t.sweeping = true
		go t.sweep()
	}
	t.mu.Unlock()
	if s.mcp != nil {
		s.hand.Lock()
		if err := t.MCP.RegisterSession(ctx, s.mcp); err != nil {
			// mcp-go registers a session object of its own instead.
			s.registered = false
			t.log.Warn("session not registered small", "error", err)
		}
		s.hand.Unlock()
	}
	return id
}

// handOver takes s's mcpSession out of mcp-go for a GET stream, which
// mcp-go registers a session of its own for (ctx is the stream's).
func (t *SessionTable) handOver(ctx context.Context, id string, s *Session) {
	s.hand.Lock()
	defer s.hand.Unlock()
	s.gets++
	if s.registered {
		s.registered = false
		t.MCP.UnregisterSession(ctx, id)
	}
}

// takeBack gives mcp-go s's mcpSession again once the session's last GET
// stream ended, unless the session did.
func (t *SessionTable) takeBack(ctx context.Context, id string, s *Session) {
	s.hand.Lock()
	defer s.hand.Unlock()
	s.gets--
	t.mu.Lock()
	alive := t.byID[id] == s
	t.mu.Unlock()
	if s.gets > 0 || s.registered || !alive {
		return
	}
	if err := t.MCP.RegisterSession(ctx, s.mcp); err == nil {
		s.registered = true
	}
}

// acquire returns the session id names when owner holds it with the same
// grant and it has not expired, marking it busy until done is called.
func (t *SessionTable) acquire(id, owner, grant string) (s *Session, ok bool) {
	t.mu.Lock()
	s = t.byID[id]
	if s == nil || s.owner != owner {
		t.mu.Unlock()
		return nil, false
	}
	if s.grant != grant {
		// The owner's token was changed by a reload: the session, and
		// what it was told under the old grant, ends here.
		cancels := t.endLocked(id)
		t.mu.Unlock()
		for _, c := range cancels {
			c()
		}
		t.log.Info("session ended: its identity's grants changed")
		if t.Release != nil {
			t.Release(id)
		}
		return nil, false
	}
	now := time.Now()
	if t.idle(s, now) {
		// The sweeper has not come round yet; the session is over all
		// the same.
		delete(t.byID, id)
		t.mu.Unlock()
		t.free([]string{id})
		return nil, false
	}
	s.busy++
	s.lastActive = now
	t.mu.Unlock()
	return s, true
}

func (t *SessionTable) Done(s *Session) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s.busy--
	s.lastActive = time.Now()
}

// stream registers the cancel of a GET stream, so that ending the session
// ends the stream; the returned func unregisters it.
func (t *SessionTable) stream(s *Session, cancel context.CancelFunc) func() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.streams == nil {
		s.streams = map[*context.CancelFunc]struct{}{}
	}
	s.streams[&cancel] = struct{}{}
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(s.streams, &cancel)
	}
}

// sessionKey carries a sessionRef in the context of a POST or GET on a
// session. A context value because mcp-go is in between: its session id
// resolver and hooks, and the handlers it calls, see the HTTP request's
// context and nothing else.
type sessionKey struct{}

// sessionRef is the session a request was made on.
type sessionRef struct {
	t *SessionTable
	s *Session
}

// Listening reports whether the session of the request in ctx has a GET
// stream open: mcp-go sends server-to-client requests (sampling, roots)
// on it only. known is false for a request that came another way (in
// process, or a protocol without sessions).
func Listening(ctx context.Context) (open, known bool) {
	ref, ok := ctx.Value(sessionKey{}).(sessionRef)
	if !ok {
		return false, false
	}
	ref.t.mu.Lock()
	defer ref.t.mu.Unlock()
	return len(ref.s.streams) > 0, true
}

// terminate ends a session: it is forgotten at once and its GET streams
// are cancelled. It reports whether the session existed.
func (t *SessionTable) terminate(id string) bool {
	t.mu.Lock()
	_, existed := t.byID[id]
	cancels := t.endLocked(id)
	t.mu.Unlock()
	for _, c := range cancels {
		c()
	}
	return existed
}

// endLocked forgets a session and returns the cancels of its GET streams,
// to be called once the lock is released.
func (t *SessionTable) endLocked(id string) []context.CancelFunc {
	s := t.byID[id]
	delete(t.byID, id)
	var cancels []context.CancelFunc
	if s != nil {
		for c := range s.streams {
			cancels = append(cancels, *c)
		}
	}
	return cancels
}

func (t *SessionTable) idle(s *Session, now time.Time) bool {
	return s.busy == 0 && now.Sub(s.lastActive) >= t.ttl
}

// expiredLocked removes and returns the sessions idle past the TTL.
func (t *SessionTable) expiredLocked(now time.Time) []string {
	var ids []string
	for id, s := range t.byID {
		if t.idle(s, now) {
			delete(t.byID, id)
			ids = append(ids, id)
		}
	}
	return ids
}

// free releases what mcp-go holds for ended sessions.
func (t *SessionTable) free(ids []string) {
	for _, id := range ids {
		t.log.Info("session expired", "idle_ttl", t.ttl.String())
		if t.Release != nil {
			t.Release(id)
		}
	}
}

// sweep expires idle sessions until none is left (or the table closes);
// create starts it again with the next session, so an idle gateway runs
// no goroutine for sessions.
func (t *SessionTable) sweep() {
	interval := min(max(t.ttl/4, time.Second), time.Minute)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-t.stop:
			return
		case now := <-ticker.C:
			t.mu.Lock()
			expired := t.expiredLocked(now)
			last := len(t.byID) == 0
			if last {
				t.sweeping = false
			}
			t.mu.Unlock()
			t.free(expired)
			if last {
				return
			}
		}
	}
}

// Close stops the sweeper, and ends the sessions left whose mcp-go state
// is an mcpSession (mcp-go's shutdown ends those it holds itself): what is
// tied to a session's end runs for them too.
func (t *SessionTable) Close() {
	t.mu.Lock()
	if !t.closed {
		t.closed = true
		close(t.stop)
	}
	var left []string
	for id, s := range t.byID {
		if s.mcp != nil {
			left = append(left, id)
		}
	}
	t.mu.Unlock()
	for _, id := range left {
		if t.Release != nil {
			t.Release(id)
		}
	}
}

// Count is the number of open sessions.
func (t *SessionTable) Count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}

// sessionManager is the table as mcp-go sees it, for one request: the
// resolver hands mcp-go a manager carrying the request's owner and
// reservation, so Generate binds the new session to the caller.
type sessionManager struct {
	t     *SessionTable
	owner string
	grant string
	res   *reservation
	ctx   context.Context // the request's
}

var (
	_ server.SessionIdManager         = sessionManager{}
	_ server.SessionIdManagerResolver = (*SessionTable)(nil)
)

// reservationKey carries an initialize request's reservation to mcp-go's
// call of Generate (the session id manager it resolves per request) and to
// its after-initialize hook: both see only the request's context.
type reservationKey struct{}

// ResolveSessionIdManager implements server.SessionIdManagerResolver; r is
// nil when mcp-go shuts down.
func (t *SessionTable) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	m := sessionManager{t: t, owner: AnonymousOwner, ctx: context.Background()}
	if r != nil {
		m.ctx = r.Context()
		m.owner = SessionOwner(r.Context())
		m.grant = SessionGrant(r.Context())
		m.res, _ = r.Context().Value(reservationKey{}).(*reservation)
	}
	return m
}

func (m sessionManager) Generate() string { return m.t.create(m.ctx, m.owner, m.grant, m.res) }

// Validate is reached only for sessions the middleware vouched for; it
// checks again so that nothing reaches mcp-go on a stale id.
func (m sessionManager) Validate(id string) (bool, error) {
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	if s := m.t.byID[id]; s == nil || s.owner != m.owner {
		return false, fmt.Errorf("session not found")
	}
	return false, nil
}

func (m sessionManager) Terminate(id string) (bool, error) {
	m.t.terminate(id)
	return false, nil
}

// Middleware enforces the table in front of mcp-go.
func (t *SessionTable) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		env, isPost := RequestEnvelope(r.Context())
		if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || (isPost && mcp.IsModernProtocol(env.MetaProtocolVersion())) {
			next.ServeHTTP(w, r)
			return
		}
		switch r.Method {
		case http.MethodPost:
			if env.Method == string(mcp.MethodInitialize) {
				res, err := t.reserve(SessionOwner(r.Context()))
				if err != nil && t.Refused != nil {
					status := http.StatusServiceUnavailable
					if errors.Is(err, errOwnSessionsBusy) {
						status = http.StatusTooManyRequests
					}
					id, _ := auth.FromContext(r.Context())
					t.Refused(r, auth.Refusal{Status: status, Identity: id, Reason: "session_limit: " + err.Error()})
				}
				if errors.Is(err, errOwnSessionsBusy) {
					w.Header().Set("Retry-After", "30")
					http.Error(w, "Too Many Requests: "+err.Error()+" (server.max_sessions_per_identity = "+strconv.Itoa(t.perOwner)+
						"); end unused sessions with DELETE or retry later", http.StatusTooManyRequests)
					return
				}
				if err != nil {
					w.Header().Set("Retry-After", "30")
					http.Error(w, "Service Unavailable: "+err.Error()+" (server.max_sessions = "+strconv.Itoa(t.max)+
						"); end unused sessions with DELETE or retry later", http.StatusServiceUnavailable)
					return
				}
				defer res.release()
				next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), reservationKey{}, res)))
				return
			}
		case http.MethodGet, http.MethodDelete:
		default:
			next.ServeHTTP(w, r)
			return
		}
		id := r.Header.Get(server.HeaderKeySessionID)
		if id == "" {
			http.Error(w, "Bad Request: the "+server.HeaderKeySessionID+" header is required (send initialize first)", http.StatusBadRequest)
			return
		}
		s, ok := t.acquire(id, SessionOwner(r.Context()), SessionGrant(r.Context()))
		if !ok {
			// The same answer for unknown, expired, ended and someone
			// else's: never tell a caller that a session exists.
			http.Error(w, "Not Found: no such session; send initialize to start a new one", http.StatusNotFound)
			return
		}
		defer t.Done(s)
		switch r.Method {
		case http.MethodGet:
			ctx, cancel := context.WithCancel(context.WithValue(r.Context(), sessionKey{}, sessionRef{t: t, s: s}))
			defer cancel()
			defer t.stream(s, cancel)()
			if s.mcp != nil {
				ctx = context.WithValue(ctx, handingOverKey{}, true)
				t.handOver(ctx, id, s)
				defer t.takeBack(ctx, id, s)
			}
			r = r.WithContext(ctx)
		case http.MethodPost:
			// The relay asks whether the caller listens (listening); the
			// session mcp-go makes for the request is given the session's
			// state (HTTPContext).
			r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, sessionRef{t: t, s: s}))
		}
		next.ServeHTTP(w, r)
	})
}

// ReleaseVia frees mcp-go's per-session state of an expired session by
// serving it an internal DELETE: the only entry point that runs its
// cleanup without its own sweeper.
func ReleaseVia(h http.Handler) func(id string) {
	return func(id string) {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodDelete, "/mcp", http.NoBody)
		req.Header.Set(server.HeaderKeySessionID, id)
		h.ServeHTTP(Discard{h: http.Header{}}, req)
	}
}

// Discard is a ResponseWriter that keeps nothing.
type Discard struct{ h http.Header }

func (d Discard) Header() http.Header         { return d.h }
func (d Discard) Write(p []byte) (int, error) { return len(p), nil }
func (d Discard) WriteHeader(int)             {}
