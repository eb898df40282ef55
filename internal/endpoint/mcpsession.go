package endpoint

import (
	"context"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// What mcp-go holds of a session between its requests.
//
// mcp-go keeps a session object per open session (streamable_http.go's
// streamableHttpSession): a 100-slot notification channel and three
// 10-slot channels of server-to-client requests, about 10 KB, made when
// the session begins. 10,000 idle sessions were 98 MB of the gateway's
// heap, and a heap that large next to the process's memory limit kept the
// collector running (a call beside them cost 5x the CPU in process with
// the binary's GOGC and GOMEMLIMIT; BenchmarkIdleSessions).
//
// So, when the session table is given the MCP server (SessionTable.MCP),
// mcp-go holds an mcpSession instead between requests: registered at
// initialize (Generate), before mcp-go would register its own, it is what
// every notification for the session goes to, and it keeps what the
// session's requests need: whether initialize succeeded, the client's info,
// capabilities and protocol version (copied in by SessionInitialized). A
// POST then runs on a session mcp-go makes for the request alone (it does
// so for any id it holds no session object of its own for), which
// hydrate gives that state back before the message is handled, with the
// notifications waiting: mcp-go writes them into the answer first, as it
// did from its own session.
//
// A tools/call in flight takes the session's notifications on its own
// stream (DuringCall), as the session mcp-go kept did. A GET stream needs
// mcp-go's own session, which mcp-go registers for the stream and
// unregisters when it ends: the table takes the mcpSession out of mcp-go
// for the stream (handOver) and puts it back after (takeBack); what the
// front door ties to a session's end ignores both (HandingOver).

// Notifications waiting for an idle session: at most notificationQueue,
// mcp-go's own number. mcp-go sends each into the session's channel, and
// drops it when the channel is full; the channel is small (queueSlots,
// made by the first notification) and, whenever mcp-go asks for it with
// more than queueFree slots taken, what waits in it moves to a slice, so
// a session that was sent something holds a few hundred bytes, not
// mcp-go's 4.8 KB channel, and a burst of senders still finds room.
const (
	notificationQueue = 100
	queueSlots        = 8
	queueFree         = 4
)

// mcpSession is a session as mcp-go's server holds it between requests.
type mcpSession struct {
	id string

	mu          sync.Mutex
	initialized bool
	info        mcp.Implementation
	caps        mcp.ClientCapabilities
	version     string
	queue       chan mcp.JSONRPCNotification
	older       []mcp.JSONRPCNotification // waited longer than what is in queue
	// live are the sessions of the tools/calls in flight: the last one
	// takes the notifications meanwhile.
	live []server.ClientSession
}

var (
	_ server.ClientSession              = (*mcpSession)(nil)
	_ server.SessionWithClientInfo      = (*mcpSession)(nil)
	_ server.SessionWithProtocolVersion = (*mcpSession)(nil)
)

func (m *mcpSession) SessionID() string { return m.id }

func (m *mcpSession) Initialize() {
	m.mu.Lock()
	m.initialized = true
	m.mu.Unlock()
}

func (m *mcpSession) Initialized() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.initialized
}

// NotificationChannel is where mcp-go sends the session's notifications:
// the stream of a call in flight, else the queue.
func (m *mcpSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.live); n > 0 {
		return m.live[n-1].NotificationChannel()
	}
	if m.queue == nil {
		m.queue = make(chan mcp.JSONRPCNotification, queueSlots)
	}
	for len(m.queue) > queueSlots-queueFree && len(m.older)+len(m.queue) < notificationQueue {
		m.older = append(m.older, <-m.queue)
	}
	return m.queue
}

// Pending is how many notifications wait for the session's next request.
func (m *mcpSession) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.older) + len(m.queue)
}

func (m *mcpSession) GetClientInfo() mcp.Implementation {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.info
}

func (m *mcpSession) SetClientInfo(info mcp.Implementation) {
	m.mu.Lock()
	m.info = info
	m.mu.Unlock()
}

func (m *mcpSession) GetClientCapabilities() mcp.ClientCapabilities {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.caps
}

func (m *mcpSession) SetClientCapabilities(caps mcp.ClientCapabilities) {
	m.mu.Lock()
	m.caps = caps
	m.mu.Unlock()
}

func (m *mcpSession) ProtocolVersion() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.version
}

// protocolVersionSetter is how mcp-go records the negotiated version on
// its sessions.
type protocolVersionSetter interface{ SetProtocolVersion(string) }

func (m *mcpSession) SetProtocolVersion(v string) {
	m.mu.Lock()
	m.version = v
	m.mu.Unlock()
}

// hydrate gives s, the session mcp-go made for one request or stream of
// this session, what the session holds, and moves the notifications
// waiting into it when moveQueue (mcp-go writes them into that answer).
func (m *mcpSession) hydrate(s server.ClientSession, moveQueue bool) {
	if s == nil || s == server.ClientSession(m) {
		return
	}
	m.mu.Lock()
	initialized, info, caps, version := m.initialized, m.info, m.caps, m.version
	m.mu.Unlock()
	// mcp-go's streamable sessions always say they are initialized.
	if initialized {
		if c, ok := s.(server.SessionWithClientInfo); ok {
			c.SetClientInfo(info)
			c.SetClientCapabilities(caps)
		}
		if v, ok := s.(protocolVersionSetter); ok && version != "" {
			v.SetProtocolVersion(version)
		}
		s.Initialize()
	}
	if !moveQueue {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.older) == 0 && len(m.queue) == 0 {
		return
	}
	for len(m.queue) > 0 && len(m.older) < notificationQueue {
		m.older = append(m.older, <-m.queue)
	}
	to := s.NotificationChannel()
	for i, n := range m.older {
		select {
		case to <- n:
		default:
			// s is full (a stream's session): the rest waits for the
			// next request.
			m.older = append(m.older[:0], m.older[i:]...)
			return
		}
	}
	m.older = nil
}

// attach lets s, the session of a tools/call in flight, take the
// notifications until the returned func is called.
func (m *mcpSession) attach(s server.ClientSession) (detach func()) {
	m.mu.Lock()
	m.live = append(m.live, s)
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for i := len(m.live) - 1; i >= 0; i-- {
			if m.live[i] == s {
				m.live = append(m.live[:i], m.live[i+1:]...)
				break
			}
		}
		if len(m.live) == 0 {
			m.live = nil
		}
	}
}

// mcpSessionOf is the mcpSession of the session ctx's request was made on
// (nil: none, or mcp-go holds its own).
func mcpSessionOf(ctx context.Context) *mcpSession {
	if ref, ok := ctx.Value(sessionKey{}).(sessionRef); ok {
		return ref.s.mcp
	}
	return nil
}

// SessionInitialized is an mcp-go after-initialize hook: it records what
// initialize told the session it made for the request on the session's
// mcpSession, before the answer goes out.
func SessionInitialized(ctx context.Context, _ any, req *mcp.InitializeRequest, res *mcp.InitializeResult) {
	r, ok := ctx.Value(reservationKey{}).(*reservation)
	if !ok || req == nil || res == nil {
		return
	}
	r.t.mu.Lock()
	s := r.session
	r.t.mu.Unlock()
	if s == nil || s.mcp == nil {
		return
	}
	m := s.mcp
	m.mu.Lock()
	m.info, m.caps, m.version, m.initialized = req.Params.ClientInfo, req.Params.Capabilities, res.ProtocolVersion, true
	m.mu.Unlock()
}

// SessionRegistered is an mcp-go register hook: a session mcp-go registers
// for a GET stream of a session the table holds gets the session's state
// and the notifications waiting.
func SessionRegistered(ctx context.Context, s server.ClientSession) {
	if m := mcpSessionOf(ctx); m != nil {
		m.hydrate(s, true)
	}
}

// HTTPContext is the streamable server's HTTP context func (it runs for
// POSTs): the session mcp-go made for the request gets the session's
// state, and for a request (whose answer mcp-go streams the waiting
// notifications into) the notifications waiting.
func HTTPContext(ctx context.Context, _ *http.Request) context.Context {
	m := mcpSessionOf(ctx)
	if m == nil {
		return ctx
	}
	env, _ := RequestEnvelope(ctx)
	m.hydrate(server.ClientSessionFromContext(ctx), env.Kind == KindRequest && !env.Answer)
	return ctx
}

// DuringCall is a tool handler middleware: while a tools/call runs on a
// session mcp-go holds an mcpSession for, the call's own stream takes the
// session's notifications, as mcp-go's own session's would have.
func DuringCall(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		m := mcpSessionOf(ctx)
		s := server.ClientSessionFromContext(ctx)
		if m == nil || s == nil || s == server.ClientSession(m) {
			return next(ctx, req)
		}
		defer m.attach(s)()
		return next(ctx, req)
	}
}

// handingOverKey marks the context of a session's GET stream and of the
// table's own register calls.
type handingOverKey struct{}

// HandingOver reports whether mcp-go unregisters a session in ctx only to
// hold it otherwise (a GET stream begins or ends): the session goes on.
func HandingOver(ctx context.Context) bool {
	v, _ := ctx.Value(handingOverKey{}).(bool)
	return v
}
