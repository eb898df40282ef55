package config

import "time"

// HTTPServer is the `server` section: limits of the streamable HTTP
// endpoint's sessions.
type HTTPServer struct {
	// SessionIdleTTL ends a session idle this long (session_idle_ttl, in
	// seconds; default 1800, 10..86400).
	SessionIdleTTL time.Duration
	// MaxSessions bounds the open sessions (default 1000, 1..1000000).
	MaxSessions int
	// MaxSessionsPerIdentity bounds one identity's open sessions
	// (default 100, 1..1000000); beyond it the identity's least recently
	// active idle session ends.
	MaxSessionsPerIdentity int
}

func defaultHTTPServer() HTTPServer {
	return HTTPServer{SessionIdleTTL: 30 * time.Minute, MaxSessions: 1000, MaxSessionsPerIdentity: 100}
}

func (d *decoder) httpServer(s *section, h *HTTPServer) {
	s.seconds("session_idle_ttl", &h.SessionIdleTTL, 10, 86400)
	s.intIn("max_sessions", &h.MaxSessions, 1, 1000000)
	s.intIn("max_sessions_per_identity", &h.MaxSessionsPerIdentity, 1, 1000000)
	s.finish()
}
