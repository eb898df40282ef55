package backend

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/oauth2"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/upstreamauth"
)

// Credentials are the upstream credentials of callers
// (*upstreamauth.Manager).
type Credentials interface {
	Token(ctx context.Context, spec *config.Server, caller auth.Identity) (*oauth2.Token, error)
	Refused(ctx context.Context, spec *config.Server, caller auth.Identity)
	Login(ctx context.Context, spec *config.Server, caller auth.Identity, session string) (*upstreamauth.LoginRequired, error)
	Wait(ctx context.Context, spec *config.Server, caller auth.Identity) error
}

var _ Credentials = (*upstreamauth.Manager)(nil)

// identityBackend serves a server whose upstream credentials belong to
// each caller (upstream_auth oauth or token_exchange): behind the one
// backend the provider supervises, every caller who uses the server gets
// an MCP session of their own (a remote server) or a container of their
// own (env_from_upstream_auth), which presents that caller's token and
// nobody else's. A caller without a token is sent to log in, through the
// call's relay (a URL-mode elicitation) where the client can be asked,
// else by the call's error.
//
// Its tools are learned from the first caller's session (a protected
// upstream lists them to nobody else) and kept; until then the server
// lists its predefined or stored tools. Sessions idle for the server's
// idle_ttl_s end, each on its own.
type identityBackend struct {
	spec  *config.Server
	creds Credentials
	// open starts one caller's backend.
	open func(ctx context.Context, caller auth.Identity, s *session) (provider.Backend, error)

	learned chan struct{}
	done    chan struct{}
	stop    context.CancelFunc
	life    context.Context

	mu       sync.Mutex
	sessions map[upstreamauth.Subject]*session
	tools    []mcpconn.Tool
	stopped  bool
}

// session is one caller's backend.
type session struct {
	b        provider.Backend
	ready    chan struct{} // closed when the start ended (b or err set)
	err      error
	lastUsed time.Time
	// token is what a container was started with (its env); a new one
	// starts a new container.
	token string
	// refused is set when the upstream answered 401 to the caller's token.
	refused atomic.Bool
}

var (
	_ provider.Backend        = (*identityBackend)(nil)
	_ provider.ToolsSource    = (*identityBackend)(nil)
	_ provider.MultiContainer = (*identityBackend)(nil)
)

func newIdentityBackend(spec *config.Server, creds Credentials, open func(ctx context.Context, caller auth.Identity, s *session) (provider.Backend, error)) *identityBackend {
	life, stop := context.WithCancel(context.Background())
	b := &identityBackend{spec: spec, creds: creds, open: open, learned: make(chan struct{}, 1), done: make(chan struct{}),
		stop: stop, life: life, sessions: map[upstreamauth.Subject]*session{}}
	go b.reapIdle()
	return b
}

// launchRemoteWithAuth is a remote server with upstream_auth: one
// streamable HTTP (or SSE) session per caller (one for all with
// client_credentials).
func launchRemoteWithAuth(s *config.Server, creds Credentials) *identityBackend {
	return newIdentityBackend(s, creds, func(ctx context.Context, caller auth.Identity, ss *session) (provider.Backend, error) {
		client := &http.Client{Transport: &bearerTransport{next: connectClient().Transport, spec: s, creds: creds, caller: caller, refused: &ss.refused}}
		return nilIfErr(launchRemote(ctx, s, client))
	})
}

// launchDockerWithAuth is a container server whose env_from_upstream_auth
// variable holds the caller's token: one container per caller (one for
// all with client_credentials), hardened and labelled as any other,
// replaced when the token it was given changes.
func launchDockerWithAuth(s *config.Server, creds Credentials, launch func(ctx context.Context, s *config.Server) (provider.Backend, error)) *identityBackend {
	return newIdentityBackend(s, creds, func(ctx context.Context, caller auth.Identity, ss *session) (provider.Backend, error) {
		tok, err := creds.Token(ctx, s, caller)
		if err != nil {
			return nil, err
		}
		own := *s
		own.Env = maps.Clone(s.Env)
		if own.Env == nil {
			own.Env = map[string]string{}
		}
		own.Env[s.EnvFromUpstreamAuth] = tok.AccessToken
		cb, err := launch(ctx, &own)
		if err != nil {
			return nil, err
		}
		ss.token = tok.AccessToken
		return cb, nil
	})
}

// bearerTransport presents the caller's current token on every request
// (refreshed by the credentials before it ends) and notes a 401.
type bearerTransport struct {
	next    http.RoundTripper
	spec    *config.Server
	creds   Credentials
	caller  auth.Identity
	refused *atomic.Bool
}

func (t *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.creds.Token(req.Context(), t.spec, t.caller)
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	resp, err := t.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		t.refused.Store(true)
	}
	return resp, err
}

// serviceSubject is the one session of a client_credentials server.
var serviceSubject = upstreamauth.Subject{Kind: "service"}

// subjectOf is whose session serves caller.
func (b *identityBackend) subjectOf(caller auth.Identity) (upstreamauth.Subject, error) {
	if !b.spec.UpstreamAuth.PerIdentity() {
		return serviceSubject, nil
	}
	return upstreamauth.SubjectOf(caller)
}

// maxLoginRounds bounds the logins one call may ask for.
const maxLoginRounds = 2

// errTokenRefused: the upstream refused the token a session presented.
var errTokenRefused = errors.New("upstream_auth: the upstream refused the token")

// CallTool calls as the caller of o: with their session, opened (and
// logged in) if need be.
func (b *identityBackend) CallTool(ctx context.Context, name string, args any, o *mcpconn.CallOptions) (*mcp.CallToolResult, error) {
	if o == nil {
		return nil, provider.Errorf(provider.KindCallFailed, b.spec.ID, "a server with per-identity credentials is called for a caller only")
	}
	subj, err := b.subjectOf(o.Caller)
	if err != nil {
		return nil, provider.Errorf(provider.KindCallFailed, b.spec.ID, "%v", err)
	}
	for round := 0; ; round++ {
		s, err := b.session(ctx, o.Caller)
		if err == nil {
			var res *mcp.CallToolResult
			if res, err = s.b.CallTool(ctx, name, args, o); err == nil {
				return res, nil
			}
			if !s.refused.Load() && !upstreamauth.IsNoToken(err) {
				return nil, hideEndpoint(err)
			}
			b.end(subj, s)
			if s.refused.Load() {
				err = errTokenRefused
			}
		}
		if errors.Is(err, errTokenRefused) {
			// The upstream refused the token: it is dropped; an oauth
			// caller logs in again, others get a new token next time.
			b.creds.Refused(ctx, b.spec, o.Caller)
		} else if !upstreamauth.IsNoToken(err) {
			return nil, err
		}
		if b.spec.UpstreamAuth.Type != config.UpstreamOAuth {
			return nil, provider.Errorf(provider.KindCallFailed, b.spec.ID, "the upstream refused the credentials; the next call gets new ones")
		}
		if round >= maxLoginRounds {
			return nil, provider.Errorf(provider.KindCallFailed, b.spec.ID, "the upstream refused the caller's new token too")
		}
		if err := b.login(ctx, o); err != nil {
			return nil, err
		}
	}
}

// login sends the caller to log in: through the call's relay, which asks
// the client with a URL-mode elicitation and returns once the login is
// done; where the client cannot be asked, the call's answer is the
// *upstreamauth.LoginRequired itself (-32042, or a tool error naming the
// link).
func (b *identityBackend) login(ctx context.Context, o *mcpconn.CallOptions) error {
	le, err := b.creds.Login(ctx, b.spec, o.Caller, o.Session)
	if err != nil {
		return provider.Errorf(provider.KindCallFailed, b.spec.ID, "%v", err)
	}
	if o.Relay == nil {
		return le
	}
	res, err := o.Relay.Elicit(ctx, mcp.ElicitationRequest{
		Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
		Params:  le.Params(),
	})
	if err != nil {
		// Not a client that can be asked within the call (it declared no
		// URL-mode elicitation, or has no stream for it): the call's
		// answer asks instead.
		return le
	}
	if res.Action != mcp.ElicitationResponseActionAccept {
		return &provider.Error{Kind: provider.KindAuthRequired, ID: b.spec.ID, Detail: "the login was " + string(res.Action) + "d; call again to be asked again"}
	}
	// Accepted: the user is logging in in their browser.
	if err := b.creds.Wait(ctx, b.spec, o.Caller); err != nil {
		return &provider.Error{Kind: provider.KindAuthRequired, ID: b.spec.ID, Detail: "the login did not complete before the call's timeout; call again once it has", Err: le}
	}
	return nil
}

// session returns the caller's running session, starting one (once,
// whoever else waits) if there is none.
func (b *identityBackend) session(ctx context.Context, caller auth.Identity) (*session, error) {
	subj, err := b.subjectOf(caller)
	if err != nil {
		return nil, provider.Errorf(provider.KindCallFailed, b.spec.ID, "%v", err)
	}
	for {
		b.mu.Lock()
		if b.stopped {
			b.mu.Unlock()
			return nil, provider.Errorf(provider.KindStopped, b.spec.ID, "stopped")
		}
		s, ok := b.sessions[subj]
		if !ok {
			break // b.mu still held
		}
		b.mu.Unlock()
		select {
		case <-s.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if s.err != nil {
			return nil, s.err // the start this call waited for failed
		}
		if b.usable(ctx, s, caller) {
			b.mu.Lock()
			s.lastUsed = time.Now()
			b.mu.Unlock()
			return s, nil
		}
		b.end(subj, s) // gone, or a container with an old token
	}
	s := &session{ready: make(chan struct{}), lastUsed: time.Now()}
	b.sessions[subj] = s
	b.mu.Unlock()

	// The start is the session's, not this call's: others may wait for it.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeoutOf(b.spec))
	backend, err := b.open(sctx, caller, s)
	if err == nil {
		var tools []mcpconn.Tool
		if tools, err = backend.ListTools(sctx); err == nil {
			b.learn(tools)
		} else {
			_ = backend.Stop(sctx)
		}
	}
	cancel()
	switch {
	case err == nil:
	case upstreamauth.IsNoToken(err):
	case s.refused.Load():
		err = errTokenRefused
	default:
		err = provider.Errorf(provider.KindCallFailed, b.spec.ID, "open the caller's session: %v", hideEndpoint(err))
	}
	b.mu.Lock()
	s.b, s.err = backend, err
	if err != nil {
		delete(b.sessions, subj)
	}
	close(s.ready)
	stopped := b.stopped
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if stopped {
		_ = backend.Stop(context.WithoutCancel(ctx))
		return nil, provider.Errorf(provider.KindStopped, b.spec.ID, "stopped")
	}
	return s, nil
}

// usable reports whether s may serve the caller still: it runs, and a
// container's token is the caller's current one.
func (b *identityBackend) usable(ctx context.Context, s *session, caller auth.Identity) bool {
	select {
	case <-s.b.Done():
		return false
	default:
	}
	if s.token == "" {
		return true
	}
	tok, err := b.creds.Token(ctx, b.spec, caller)
	return err == nil && tok.AccessToken == s.token
}

// end stops s and forgets it, if it is still subj's.
func (b *identityBackend) end(subj upstreamauth.Subject, s *session) {
	b.mu.Lock()
	if b.sessions[subj] == s {
		delete(b.sessions, subj)
	}
	b.mu.Unlock()
	if s.b != nil {
		_ = s.b.Stop(context.Background())
	}
}

// learn keeps tools as the server's and signals a change.
func (b *identityBackend) learn(tools []mcpconn.Tool) {
	b.mu.Lock()
	same := b.tools != nil && slices.EqualFunc(b.tools, tools, func(x, y mcpconn.Tool) bool {
		return x.Name == y.Name && x.Description == y.Description && string(x.InputSchema) == string(y.InputSchema)
	})
	if !same {
		b.tools = slices.Clone(tools)
	}
	b.mu.Unlock()
	if !same {
		select {
		case b.learned <- struct{}{}:
		default:
		}
	}
}

// ListTools returns the tools learned from a caller's session;
// provider.ErrToolsUnknown before the first (a protected upstream lists
// them to nobody else).
func (b *identityBackend) ListTools(context.Context) ([]mcpconn.Tool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tools == nil {
		return nil, provider.ErrToolsUnknown
	}
	return slices.Clone(b.tools), nil
}

// Learned implements provider.ToolsSource.
func (b *identityBackend) Learned() <-chan struct{} { return b.learned }

// ContainerIDs implements provider.MultiContainer.
func (b *identityBackend) ContainerIDs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, s := range b.sessions {
		if s.b != nil {
			if id := s.b.ContainerID(); id != "" {
				out = append(out, id)
			}
		}
	}
	return out
}

// reapIdle ends the sessions idle past the server's idle TTL.
func (b *identityBackend) reapIdle() {
	ttl := b.spec.IdleTTL
	if ttl <= 0 {
		ttl = 5 * time.Minute
	}
	t := time.NewTicker(min(ttl/2, 30*time.Second))
	defer t.Stop()
	for {
		select {
		case <-b.life.Done():
			return
		case <-t.C:
		}
		var idle []*session
		b.mu.Lock()
		for k, s := range b.sessions {
			select {
			case <-s.ready:
			default:
				continue // starting
			}
			if time.Since(s.lastUsed) > ttl {
				idle = append(idle, s)
				delete(b.sessions, k)
			}
		}
		b.mu.Unlock()
		for _, s := range idle {
			if s.b != nil {
				_ = s.b.Stop(b.life)
			}
		}
	}
}

func (b *identityBackend) Done() <-chan struct{} { return b.done }
func (b *identityBackend) Exit() string          { return "stopped" }
func (b *identityBackend) Stderr() string        { return "" }
func (b *identityBackend) ContainerID() string   { return "" }

// Stop ends every caller's session.
func (b *identityBackend) Stop(ctx context.Context) error {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return nil
	}
	b.stopped = true
	all := slices.Collect(maps.Values(b.sessions))
	b.sessions = map[upstreamauth.Subject]*session{}
	b.mu.Unlock()
	var errs []error
	for _, s := range all {
		<-s.ready
		if s.b != nil {
			errs = append(errs, s.b.Stop(ctx))
		}
	}
	b.stop()
	close(b.done)
	return errors.Join(errs...)
}

func startTimeoutOf(s *config.Server) time.Duration {
	if s.StartTimeout > 0 {
		return s.StartTimeout
	}
	return provider.DefaultStartTimeout
}
