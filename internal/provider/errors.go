package provider

import (
	"errors"
	"fmt"
)

// Error kinds. These strings are part of the wire contract: tool errors
// start with "<kind>: <id>" and hangar_call reports the kind as error_type.
// The first three are fixed by seed 001.
const (
	KindUnknownServer   = "unknown_mcp_server"
	KindUnknownGroup    = "unknown_group"
	KindNoHealthyMember = "no_healthy_members_in_group"
	KindCircuitOpen     = "circuit_open" // a group's breaker refuses calls

	KindStartFailed    = "start_failed"     // the backend could not be started
	KindCrashed        = "provider_crashed" // the backend died under a call
	KindStopped        = "provider_stopped" // stopped on purpose under a call
	KindUnavailable    = "provider_unavailable"
	KindBusy           = "provider_busy" // a concurrency limit held past the timeout
	KindToolNotAllowed = "tool_not_allowed"
	KindTimeout        = "call_timeout"
	KindCallFailed     = "call_failed" // protocol or transport error on a call
	KindToolError      = "tool_error"  // the tool itself reported an error
	// KindAuthRequired: the caller has no upstream credential for the
	// server yet (upstream_auth): they are sent to log in.
	KindAuthRequired = "auth_required"
)

// Error is a provider error with a wire kind.
type Error struct {
	Kind   string
	ID     string // provider (or group) ID; "<id>.<tool>" for tool errors
	Detail string // human cause, put in parentheses
	Err    error  // underlying cause, for errors.Is / As
}

func (e *Error) Error() string {
	s := e.Kind + ": " + e.ID
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an Error whose detail is formatted.
func Errorf(kind, id, format string, a ...any) *Error {
	return &Error{Kind: kind, ID: id, Detail: fmt.Sprintf(format, a...)}
}

// KindOf returns the wire kind of err, or KindCallFailed. An error of
// another package says its kind with an ErrorKind method (auth's
// refusals: auth.KindForbidden).
func KindOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	var k interface{ ErrorKind() string }
	if errors.As(err, &k) {
		return k.ErrorKind()
	}
	return KindCallFailed
}
