package manage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// Notification methods of seed 003.
const (
	MethodChanged        = "mcp/changed"
	MethodStatusChanged  = "mcp/server/status_changed"
	MethodCatalogChanged = "mcp/server/catalog_changed"
)

// MethodLog is the /events frame of one line of a followed server's log
// (GET /events?follow=ID): hangar's own, for the dashboard, never sent to
// an MCP session.
const MethodLog = "hangar/log"

// Follower sends server's log lines to send (the params of MethodLog
// frames) until ctx ends or send returns false: what the server has
// logged lately, then each new line.
type Follower func(ctx context.Context, server string, send func(params any) bool)

// identityOf is the caller's identity; a request that never passed the
// auth middleware is local and may do everything.
func identityOf(ctx context.Context) auth.Identity {
	if id, ok := auth.FromContext(ctx); ok {
		return id
	}
	return auth.Local(auth.KindLocal)
}

// mayRead reports whether id may see notifications about server.
func mayRead(id auth.Identity, server string) bool {
	return id.Has(auth.ScopeRead) && (server == "" || id.MayReach(server))
}

// Notifier delivers notifications, in the order they are published, to
// every MCP session and /events subscriber that may read them. Delivery
// never blocks the publisher: a session whose mcp-go channel (100 slots)
// is full misses the message (logged), and an /events subscriber that
// falls behind is disconnected so that it reconnects and re-lists.
type Notifier struct {
	Log *slog.Logger
	// Follow, when set, serves /events?follow=ID: beside the
	// notifications, the subscriber gets that server's log, if it may
	// read the server (else nothing of it: an unknown server and one out
	// of reach look alike).
	Follow Follower

	mu       sync.Mutex
	mcp      *server.MCPServer
	sessions map[string]auth.Identity
	subs     map[*subscriber]struct{}
}

type subscriber struct {
	id   auth.Identity
	ch   chan []byte
	gone chan struct{} // closed when the subscriber is dropped for lagging
}

// subscriberBuffer is how many events an /events client may lag behind.
const subscriberBuffer = 256

// NewNotifier returns a notifier with no sessions.
func NewNotifier(log *slog.Logger) *Notifier {
	if log == nil {
		log = slog.Default()
	}
	return &Notifier{Log: log, sessions: map[string]auth.Identity{}, subs: map[*subscriber]struct{}{}}
}

// Hooks returns the mcp-go hooks that track sessions and who owns them;
// pass them to server.WithHooks, and the server to Attach.
func (n *Notifier) Hooks() *server.Hooks {
	h := &server.Hooks{}
	h.AddOnRegisterSession(func(ctx context.Context, s server.ClientSession) {
		n.mu.Lock()
		n.sessions[s.SessionID()] = identityOf(ctx)
		n.mu.Unlock()
	})
	h.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) {
		n.mu.Lock()
		delete(n.sessions, s.SessionID())
		n.mu.Unlock()
	})
	return h
}

// Sessions is how many MCP sessions are registered.
func (n *Notifier) Sessions() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.sessions)
}

// Attach sets the MCP server whose sessions receive notifications.
func (n *Notifier) Attach(s *server.MCPServer) {
	n.mu.Lock()
	n.mcp = s
	n.mu.Unlock()
}

// Publish sends method with params to every reader of server ("" means
// any reader).
func (n *Notifier) Publish(method, srv string, params map[string]any) {
	n.PublishFiltered(method, func(id auth.Identity) (map[string]any, bool) {
		return params, mayRead(id, srv)
	})
}

// PublishFiltered sends method to every session and subscriber with
// hangar:read for which build returns ok, with the params build returns
// for that identity.
func (n *Notifier) PublishFiltered(method string, build func(auth.Identity) (map[string]any, bool)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mcp != nil {
		for sid, id := range n.sessions {
			params, ok := build(id)
			if !ok || !id.Has(auth.ScopeRead) {
				continue
			}
			if err := n.mcp.SendNotificationToSpecificClient(sid, method, params); err != nil && !errors.Is(err, server.ErrSessionNotInitialized) {
				n.Log.Warn("notification not delivered", "method", method, "session", sid, "error", err)
			}
		}
	}
	for s := range n.subs {
		params, ok := build(s.id)
		if !ok || !s.id.Has(auth.ScopeRead) {
			continue
		}
		data, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
		if err != nil {
			n.Log.Error("notification not encoded", "method", method, "error", err)
			return
		}
		select {
		case s.ch <- data:
		default:
			delete(n.subs, s)
			close(s.gone)
			n.Log.Warn("events subscriber dropped: it fell behind", "identity", s.id.Name)
		}
	}
}

// Events serves /events: the notifications as Server-Sent Events, for
// clients of the stateless protocol that have no GET stream.
func (n *Notifier) Events(heartbeat time.Duration) http.Handler {
	if heartbeat <= 0 {
		heartbeat = 30 * time.Second
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		id := identityOf(r.Context())
		if !id.Has(auth.ScopeRead) {
			http.Error(w, auth.MissingScope(auth.ScopeRead).Message, http.StatusForbidden)
			return
		}
		fl, ok := w.(http.Flusher)
		if !ok {
			http.Error(w, "streaming unsupported", http.StatusInternalServerError)
			return
		}
		s := &subscriber{id: id, ch: make(chan []byte, subscriberBuffer), gone: make(chan struct{})}
		n.mu.Lock()
		n.subs[s] = struct{}{}
		n.mu.Unlock()
		defer func() {
			n.mu.Lock()
			delete(n.subs, s)
			n.mu.Unlock()
		}()
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		_, _ = fmt.Fprint(w, ": hangar events\n\n")
		fl.Flush()
		lines, stop := n.follow(r, id)
		defer stop()
		t := time.NewTicker(heartbeat)
		defer t.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-s.gone:
				return
			case <-t.C:
				_, _ = fmt.Fprint(w, ": keep-alive\n\n")
			case data := <-lines:
				if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", MethodLog, data); err != nil {
					return
				}
			case data := <-s.ch:
				var m struct {
					Method string `json:"method"`
				}
				_ = json.Unmarshal(data, &m)
				if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", m.Method, data); err != nil {
					return
				}
			}
			fl.Flush()
		}
	})
}

// follow starts the log of the server r asks to follow (?follow=ID), if
// id may read it: its frames arrive on lines; stop ends it and waits for
// it. Without one, lines is nil (never ready).
func (n *Notifier) follow(r *http.Request, id auth.Identity) (lines <-chan []byte, stop func()) {
	server := r.URL.Query().Get("follow")
	if server == "" || n.Follow == nil || !mayRead(id, server) {
		return nil, func() {}
	}
	ch := make(chan []byte)
	ctx, cancel := context.WithCancel(r.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.Follow(ctx, server, func(params any) bool {
			data, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": MethodLog, "params": params})
			if err != nil {
				n.Log.Error("log line not encoded", "error", err)
				return true
			}
			select {
			case ch <- data:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	return ch, func() {
		cancel()
		<-done
	}
}

// Sink receives provider events (it is the provider.Events of the
// manager) and queues state changes for the management service without
// blocking: StateChanged is called with the provider's lock held.
type Sink struct {
	Next provider.Events

	mu     sync.Mutex
	queue  []stateChange
	signal chan struct{}
}

type stateChange struct {
	id       string
	from, to provider.State
	// healthy marks a successful health check (which refreshes the tools)
	// rather than a transition.
	healthy bool
}

// NewSink returns a sink forwarding every event to next.
func NewSink(next provider.Events) *Sink {
	if next == nil {
		next = provider.NoEvents{}
	}
	return &Sink{Next: next, signal: make(chan struct{}, 1)}
}

var _ provider.Events = (*Sink)(nil)

// StateChanged implements provider.Events.
func (s *Sink) StateChanged(id string, from, to provider.State) {
	s.Next.StateChanged(id, from, to)
	s.push(stateChange{id: id, from: from, to: to})
}

func (s *Sink) push(c stateChange) {
	s.mu.Lock()
	s.queue = append(s.queue, c)
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// QuarantineChanged implements provider.Events.
func (s *Sink) QuarantineChanged(id string) { s.Next.QuarantineChanged(id) }

// ColdStart implements provider.Events.
func (s *Sink) ColdStart(id string, d time.Duration, err error) { s.Next.ColdStart(id, d, err) }

// BackendExited implements provider.Events.
func (s *Sink) BackendExited(id, exit string, oom bool) { s.Next.BackendExited(id, exit, oom) }

// CallDone implements provider.Events.
func (s *Sink) CallDone(id, tool, outcome string, d time.Duration) {
	s.Next.CallDone(id, tool, outcome, d)
}

// HealthChecked implements provider.Events. A passing check refreshed the
// provider's tools, so its catalog is compared again (the check reports
// just before it stores the tools: a change may show at the next check).
func (s *Sink) HealthChecked(id string, err error) {
	s.Next.HealthChecked(id, err)
	if err == nil {
		s.push(stateChange{id: id, healthy: true})
	}
}

// Removed implements provider.Events.
func (s *Sink) Removed(id string) { s.Next.Removed(id) }

// take returns the queued changes, oldest first.
func (s *Sink) take() []stateChange {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue = nil
	return q
}
