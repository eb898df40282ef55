package frontdoor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/telemetry"
)

// resources/subscribe and resources/unsubscribe on the front door. mcp-go
// answers both itself and has no handler to plug in, only hooks; the one
// that can refuse a request is OnRequestInitialization, so the front door
// does its work there: it checks the caller, subscribes upstream, and on
// success lets mcp-go acknowledge. The owning provider is subscribed once
// per URI while at least one client session is; its updates go to exactly
// those sessions. A session's subscriptions end with it
// (OnUnregisterSession: DELETE, idle expiry, shutdown). A provider that
// stops loses its subscriptions: they are not what keeps it running, and
// when it runs again the front door subscribes it again within a tick
// (updates it sent in between are lost). Protocol 2026-07-28 removed the
// two methods (mcp-go refuses them there).

// subKey is one upstream subscription: a URI on the server that owns it.
type subKey struct{ server, uri string }

// upstream is the state of one subKey.
type upstream struct {
	mu sync.Mutex // one upstream change at a time
	// on is the backend the URI is subscribed on, nil when none; guarded
	// by mu.
	on provider.Extras
	// sessions subscribed; guarded by subscriptions.mu.
	sessions map[string]struct{}
}

// subscriptions is the front door's subscriber table.
type subscriptions struct {
	mu        sync.Mutex
	byKey     map[subKey]*upstream
	bySession map[string]map[subKey]struct{}
}

// add records session's subscription to key; added is false when it was
// there already.
func (s *subscriptions) add(session string, key subKey) (up *upstream, added bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey == nil {
		s.byKey, s.bySession = map[subKey]*upstream{}, map[string]map[subKey]struct{}{}
	}
	up = s.byKey[key]
	if up == nil {
		up = &upstream{sessions: map[string]struct{}{}}
		s.byKey[key] = up
	}
	if _, ok := up.sessions[session]; ok {
		return up, false
	}
	up.sessions[session] = struct{}{}
	if s.bySession[session] == nil {
		s.bySession[session] = map[subKey]struct{}{}
	}
	s.bySession[session][key] = struct{}{}
	return up, true
}

// remove forgets session's subscription to key and returns its upstream
// (nil when there is none).
func (s *subscriptions) remove(session string, key subKey) *upstream {
	s.mu.Lock()
	defer s.mu.Unlock()
	up := s.byKey[key]
	if up != nil {
		delete(up.sessions, session)
	}
	if keys := s.bySession[session]; keys != nil {
		delete(keys, key)
		if len(keys) == 0 {
			delete(s.bySession, session)
		}
	}
	return up
}

// drop forgets every subscription of session and returns their keys.
func (s *subscriptions) drop(session string) []subKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []subKey
	for key := range s.bySession[session] {
		if up := s.byKey[key]; up != nil {
			delete(up.sessions, session)
		}
		keys = append(keys, key)
	}
	delete(s.bySession, session)
	return keys
}

func (s *subscriptions) wanted(up *upstream) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(up.sessions) > 0
}

// sessionsOf lists the sessions subscribed to key.
func (s *subscriptions) sessionsOf(key subKey) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	up := s.byKey[key]
	if up == nil {
		return nil
	}
	out := make([]string, 0, len(up.sessions))
	for id := range up.sessions {
		out = append(out, id)
	}
	return out
}

// forget removes key's upstream from the table once nobody wants it and
// nothing is subscribed upstream; the caller holds up.mu.
func (s *subscriptions) forget(key subKey, up *upstream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(up.sessions) == 0 && up.on == nil && s.byKey[key] == up {
		delete(s.byKey, key)
	}
}

// snapshot lists the keys with their upstreams, sorted.
func (s *subscriptions) snapshot() ([]subKey, []*upstream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]subKey, 0, len(s.byKey))
	for k := range s.byKey {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].server < keys[j].server || keys[i].server == keys[j].server && keys[i].uri < keys[j].uri
	})
	ups := make([]*upstream, len(keys))
	for i, k := range keys {
		ups[i] = s.byKey[k]
	}
	return keys, ups
}

// Subscriptions lists, by URI, the number of client sessions subscribed
// through the front door.
func (f *FrontDoor) Subscriptions() map[string]int {
	f.subs.mu.Lock()
	defer f.subs.mu.Unlock()
	out := map[string]int{}
	for k, up := range f.subs.byKey {
		if len(up.sessions) > 0 {
			out[k.uri] += len(up.sessions)
		}
	}
	return out
}

// syncUpstream brings key's upstream subscription in step with its
// sessions: subscribed on the backend running now while anyone is, else
// unsubscribed. With start, a provider that is not running is started (a
// client's subscribe); without, it is left alone.
func (f *FrontDoor) syncUpstream(ctx context.Context, key subKey, up *upstream, start bool) error {
	up.mu.Lock()
	defer up.mu.Unlock()
	defer f.subs.forget(key, up)
	if !f.subs.wanted(up) {
		if up.on == nil {
			return nil
		}
		on := up.on
		up.on = nil
		err := f.src.Extras(ctx, key.server, false, func(ctx context.Context, b provider.Extras) error {
			if b != on {
				return nil // another run: it never had the subscription
			}
			return b.Unsubscribe(ctx, key.uri)
		})
		if errors.Is(err, provider.ErrNotRunning) {
			return nil
		}
		return err
	}
	err := f.src.Extras(ctx, key.server, start, func(ctx context.Context, b provider.Extras) error {
		if b == up.on {
			return nil
		}
		if err := b.Subscribe(ctx, key.uri, f.relayUpdated(key)); err != nil {
			return err
		}
		up.on = b
		return nil
	})
	if errors.Is(err, provider.ErrNotRunning) && !start {
		up.on = nil // it stopped; subscribed again when it runs
		return nil
	}
	return err
}

// relayUpdated passes a provider's notifications/resources/updated for
// key to the sessions subscribed to it. It runs on the provider
// connection's read loop: sending never blocks (mcp-go drops a
// notification for a session whose queue is full).
func (f *FrontDoor) relayUpdated(key subKey) func(params map[string]any) {
	return func(params map[string]any) {
		srv := f.mcp.Load()
		if srv == nil || (f.Withheld != nil && f.Withheld(key.server)) {
			return // a withheld server's updates reach nobody
		}
		for _, session := range f.subs.sessionsOf(key) {
			if err := srv.SendNotificationToSpecificClient(session, mcp.MethodNotificationResourceUpdated, params); err != nil {
				f.log.Debug("resource update not relayed", telemetry.FieldServer, key.server, telemetry.FieldError, err)
			}
		}
	}
}

// resubscribe subscribes again, on the run there is now, what a provider
// lost by stopping or restarting. Run calls it every tick.
func (f *FrontDoor) resubscribe(ctx context.Context) {
	keys, ups := f.subs.snapshot()
	failed := map[subKey]string{}
	for i, key := range keys {
		sctx, cancel := context.WithTimeout(ctx, extrasTimeout)
		if err := f.syncUpstream(sctx, key, ups[i], false); err != nil {
			failed[key] = err.Error()
			// Once per failure, not once a tick.
			if f.resubFailed[key] != err.Error() {
				f.log.Warn("resource subscription not renewed", telemetry.FieldServer, key.server, telemetry.FieldError, err)
			}
		}
		cancel()
	}
	f.resubFailed = failed
}

// subscribe is a client session's resources/subscribe.
func (f *FrontDoor) subscribe(ctx context.Context, session, uri string) error {
	owner, ok := f.ownerOf(uri)
	if !ok || !f.serves(ctx, owner) {
		return errResourceNotServed(uri)
	}
	// The scope of the method (hangar:read: an update names a URI, reading
	// it still needs hangar:call).
	if e := auth.Caller(ctx).Check(auth.MethodScope(string(mcp.MethodResourcesSubscribe)), ""); e != nil {
		return e
	}
	if err := f.admit(ctx, string(mcp.MethodResourcesSubscribe), owner, uri, ""); err != nil {
		return err
	}
	key := subKey{owner, uri}
	up, added := f.subs.add(session, key)
	if !added {
		return nil
	}
	if err := f.syncUpstream(ctx, key, up, true); err != nil {
		f.subs.remove(session, key)
		// Undo what this session alone asked for.
		_ = f.syncUpstream(context.WithoutCancel(ctx), key, up, false)
		return fmt.Errorf("resources/subscribe on %s: %w", owner, err)
	}
	return nil
}

// unsubscribe is a client session's resources/unsubscribe; a URI it is
// not subscribed to is no error.
func (f *FrontDoor) unsubscribe(ctx context.Context, session, uri string) error {
	f.subs.mu.Lock()
	var key subKey
	found := false
	for k := range f.subs.bySession[session] {
		if k.uri == uri {
			key, found = k, true
			break
		}
	}
	f.subs.mu.Unlock()
	if !found {
		return nil
	}
	if up := f.subs.remove(session, key); up != nil {
		return f.syncUpstream(ctx, key, up, false)
	}
	return nil
}

// sessionEnded drops a session's subscriptions.
func (f *FrontDoor) sessionEnded(ctx context.Context, session string) {
	for _, key := range f.subs.drop(session) {
		f.subs.mu.Lock()
		up := f.subs.byKey[key]
		f.subs.mu.Unlock()
		if up == nil {
			continue
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), extrasTimeout)
		if err := f.syncUpstream(sctx, key, up, false); err != nil {
			f.log.Warn("resource subscription not ended upstream", telemetry.FieldServer, key.server, telemetry.FieldError, err)
		}
		cancel()
	}
}

// subscribeMethod marks the messages onRequest looks into: both methods
// end with it, and a cheap search keeps every other request undecoded.
var subscribeMethod = []byte(`subscribe"`)

// onRequest is the OnRequestInitialization hook: it serves the front
// door's part of resources/subscribe and resources/unsubscribe before
// mcp-go acknowledges them, and refuses them with a reason.
func (f *FrontDoor) onRequest(ctx context.Context, _ any, message any) error {
	if env, ok := endpoint.RequestEnvelope(ctx); ok && env.Method != string(mcp.MethodResourcesSubscribe) && env.Method != string(mcp.MethodResourcesUnsubscribe) {
		return nil // over HTTP the method is known without looking
	}
	raw, ok := message.(json.RawMessage)
	if !ok || !bytes.Contains(raw, subscribeMethod) {
		return nil
	}
	var m struct {
		Method string `json:"method"`
		Params struct {
			URI string `json:"uri"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &m) != nil || m.Params.URI == "" {
		return nil // mcp-go answers what is malformed
	}
	if m.Method != string(mcp.MethodResourcesSubscribe) && m.Method != string(mcp.MethodResourcesUnsubscribe) {
		return nil
	}
	if mcp.IsModernProtocol(server.RequestProtocolVersion(ctx)) {
		return nil // removed in 2026-07-28: mcp-go says so
	}
	session := server.ClientSessionFromContext(ctx)
	if session == nil {
		return fmt.Errorf("%s needs a session (send initialize first)", m.Method)
	}
	if m.Method == string(mcp.MethodResourcesUnsubscribe) {
		return f.unsubscribe(ctx, session.SessionID(), m.Params.URI)
	}
	return f.subscribe(ctx, session.SessionID(), m.Params.URI)
}

// ListNeutralHooks are the hooks Hooks adds that see every request but
// leave a tools/list alone (onRequest returns at once for any method but
// resources/subscribe and resources/unsubscribe), so the listing cache
// need not defer to mcp-go for them.
func (f *FrontDoor) ListNeutralHooks() server.Hooks {
	return server.Hooks{OnRequestInitialization: []server.OnRequestInitializationFunc{f.onRequest, f.onToolCall}}
}

// Hooks returns base (nil: none) with the front door's hooks added, as a
// new value: base is left as it was.
func (f *FrontDoor) Hooks(base *server.Hooks) *server.Hooks {
	h := &server.Hooks{}
	if base != nil {
		*h = *base
	}
	h.OnRequestInitialization = append(append([]server.OnRequestInitializationFunc{}, h.OnRequestInitialization...), f.onRequest, f.onToolCall)
	h.OnAfterListResources = append(append([]server.OnAfterListResourcesFunc{}, h.OnAfterListResources...), f.resourceFilter)
	h.OnAfterListResourceTemplates = append(append([]server.OnAfterListResourceTemplatesFunc{}, h.OnAfterListResourceTemplates...), f.templateFilter)
	h.OnRegisterSession = append(append([]server.OnRegisterSessionHookFunc{}, h.OnRegisterSession...), f.listing.sessions.register)
	h.OnUnregisterSession = append(append([]server.OnUnregisterSessionHookFunc{}, h.OnUnregisterSession...),
		func(ctx context.Context, s server.ClientSession) {
			if !endpoint.HandingOver(ctx) { // the session goes on
				f.sessionEnded(ctx, s.SessionID())
				f.searchSessionEnded(s.SessionID())
			}
		},
		f.listing.sessions.unregister)
	return h
}
