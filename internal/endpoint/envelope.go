package endpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/auth"
)

// The JSON-RPC envelope of a POSTed message is checked here, before mcp-go
// sees it, because mcp-go takes a request whose "id" is null (or an object,
// or an array) for a notification and drops it without an answer, and
// answers a batch with a parse error. The body is read once, bounded, and
// handed on as bytes.

// Message kinds.
const (
	KindRequest      = "request"
	KindNotification = "notification"
	KindResponse     = "response"
)

// JSON-RPC error codes the envelope check answers with.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// Envelope is what the gateway knows of a POSTed JSON-RPC message before
// mcp-go parses it.
type Envelope struct {
	Kind   string // KindRequest | KindNotification | KindResponse
	Method string // "" for a response
	// ID is the request id as sent (a JSON string or number), nil for a
	// notification.
	ID json.RawMessage
	// Params is the request's Params as sent, for MetaProtocolVersion and
	// the direct call path.
	Params json.RawMessage
	// Answer: a request that also has a non-null "result", which mcp-go
	// takes for a response (and drops).
	Answer bool
}

// MetaProtocolVersion is params._meta's protocol version (MCP 2026-07-28
// states it per request), "" when absent. It decodes the params when
// asked, not in ParseEnvelope: the session table only needs it when the
// request's header does not already say 2026-07-28.
func (e Envelope) MetaProtocolVersion() string { return metaProtocolVersion(e.Params) }

// EnvelopeError is a message refused by the envelope check, answered as a
// JSON-RPC error.
type EnvelopeError struct {
	Code    int
	Message string
	// ID is echoed in the answer when the message had a valid one.
	ID json.RawMessage
}

func (e *EnvelopeError) Error() string { return e.Message }

func invalid(id json.RawMessage, format string, args ...any) *EnvelopeError {
	return &EnvelopeError{Code: codeInvalidRequest, Message: "Invalid Request: " + fmt.Sprintf(format, args...), ID: id}
}

// ParseEnvelope classifies one POST body. It never returns both a nil
// error and an unusable envelope: every message mcp-go would misread is
// refused here.
func ParseEnvelope(body []byte) (Envelope, *EnvelopeError) {
	// JSON's whitespace only: bytes.TrimSpace would also drop \f and
	// friends, and so accept what a JSON parser refuses.
	trimmed := bytes.Trim(body, " \t\r\n")
	if len(trimmed) == 0 {
		return Envelope{}, &EnvelopeError{Code: codeParseError, Message: "Parse error: empty body"}
	}
	notJSON := &EnvelopeError{Code: codeParseError, Message: "Parse error: body is not valid JSON"}
	switch trimmed[0] {
	case '{':
		// Decoding the object below validates it: one pass, not two.
	case '[':
		if !json.Valid(trimmed) {
			return Envelope{}, notJSON
		}
		// MCP 2025-06-18 removed JSON-RPC batching and mcp-go does not
		// accept batches: refuse the whole array rather than answer each
		// element with an error it did not deserve.
		return Envelope{}, invalid(nil, "batch requests are not supported; send one JSON-RPC message per POST")
	default:
		if !json.Valid(trimmed) {
			return Envelope{}, notJSON
		}
		return Envelope{}, invalid(nil, "a JSON-RPC message must be a JSON object")
	}
	var m map[string]bodyRef
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return Envelope{}, notJSON
	}

	for k := range m {
		// mcp-go decodes the message into structs, whose field names
		// match case-insensitively ("Method" is the method, the last of
		// several wins); here keys match exactly. Where the two could
		// read one message differently, it is refused: the scope guard
		// acts on this envelope and mcp-go on its own reading.
		for _, known := range envelopeKeys {
			// EqualFold: encoding/json's own matching (Unicode simple
			// folding: "ſ" is an "s" to it, and "K" a "k").
			if k != known && strings.EqualFold(k, known) {
				return Envelope{}, invalid(nil, "member %q: JSON-RPC member names are lower case (%q)", k, known)
			}
		}
	}
	var env Envelope
	rawID, hasID := m["id"]
	if hasID {
		if !isStringOrNumber(rawID) {
			return Envelope{}, invalid(nil, "id must be a string or a number (got %s)", describeID(rawID))
		}
		env.ID = json.RawMessage(rawID)
	}
	if v, ok := m["jsonrpc"]; !ok || string(v) != `"2.0"` {
		return Envelope{}, invalid(env.ID, `jsonrpc must be "2.0"`)
	}
	if raw, ok := m["method"]; ok {
		if err := json.Unmarshal(raw, &env.Method); err != nil || jsonKind(raw) != "string" {
			return Envelope{}, invalid(env.ID, "method must be a string (got %s)", jsonKind(raw))
		}
		if env.Method == "" {
			return Envelope{}, invalid(env.ID, "method must not be empty")
		}
		env.Kind = KindNotification
		if hasID {
			env.Kind = KindRequest
		}
		env.Params = json.RawMessage(m["params"])
		if res, ok := m["result"]; ok && jsonKind(res) != "null" {
			env.Answer = true
		}
		return env, nil
	}
	_, hasResult := m["result"]
	_, hasError := m["error"]
	switch {
	case !hasResult && !hasError:
		return Envelope{}, invalid(env.ID, "a message needs a method (request, notification) or a result or an error (response)")
	case hasResult && hasError:
		return Envelope{}, invalid(env.ID, "a response has a result or an error, not both")
	case !hasID:
		return Envelope{}, invalid(nil, "a response needs the id of the request it answers")
	}
	env.Kind = KindResponse
	return env, nil
}

// bodyRef is a member's JSON as it lies in the body, not copied (as
// json.RawMessage would): the envelope's ID and Params are read while the
// request is served, and the body they point into is never written after
// it is read.
type bodyRef []byte

func (r *bodyRef) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

// envelopeKeys are the JSON-RPC members.
var envelopeKeys = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}

// isStringOrNumber also refuses a number no float64 holds (1e400): mcp-go
// could not decode it and would answer a parse error without the id.
func isStringOrNumber(raw []byte) bool {
	switch jsonKind(raw) {
	case "string":
		return true
	case "number":
		var f float64
		return json.Unmarshal(raw, &f) == nil
	}
	return false
}

// jsonKind names the JSON type of a valid value.
func jsonKind(raw []byte) string {
	raw = bytes.Trim(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func describeID(raw []byte) string {
	if k := jsonKind(raw); k != "number" {
		return k
	}
	return "a number out of range"
}

func metaProtocolVersion(params json.RawMessage) string {
	// Most requests carry no _meta: do not decode large arguments for it.
	if len(params) == 0 || jsonKind(params) != "object" || !bytes.Contains(params, []byte(`"_meta"`)) {
		return ""
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	var v string
	_ = json.Unmarshal(p.Meta[mcp.MetaKeyProtocolVersion], &v)
	return v
}

// envelopeKey carries the envelope the endpoint's envelope stage read to
// the stages and handlers after it, mcp-go's hooks included: the body is
// read once, and mcp-go passes on the HTTP request's context only.
type envelopeKey struct{}

// RequestEnvelope returns the envelope of the POST being served, checked
// by the HTTP endpoint; ok is false outside a POST to /mcp.
func RequestEnvelope(ctx context.Context) (Envelope, bool) {
	env, ok := ctx.Value(envelopeKey{}).(Envelope)
	return env, ok
}

// WithEnvelope is ctx carrying env, as CheckEnvelope hands a request on
// (for handlers served without the endpoint, and their tests).
func WithEnvelope(ctx context.Context, env Envelope) context.Context {
	return context.WithValue(ctx, envelopeKey{}, env)
}

// CheckEnvelope reads a POST body of at most limit bytes once, refuses
// what ParseEnvelope refuses, and hands the body on in memory (the scope
// guard and mcp-go share that one buffer) with the envelope in the
// context. A larger body is refused with 413: by its Content-Length before
// anything is read, else after reading limit+1 bytes, so a huge body costs
// no memory.
func CheckEnvelope(limit int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			tooLarge(w, r, limit)
			return
		}
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		if r.Body == nil {
			r.Body = http.NoBody
		}
		body, err := readUpTo(r.Body, r.ContentLength, limit)
		if errors.Is(err, errBodyTooLarge) {
			tooLarge(w, r, limit)
			return
		}
		if err != nil {
			http.Error(w, "Bad Request: reading the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		env, eerr := ParseEnvelope(body)
		if eerr != nil {
			writeEnvelopeError(w, eerr)
			return
		}
		r.Body = &MemBody{b: body}
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), envelopeKey{}, env)))
	})
}

func writeEnvelopeError(w http.ResponseWriter, e *EnvelopeError) {
	auth.WriteError(w, http.StatusBadRequest, e.ID, &auth.Error{Code: e.Code, Message: e.Message})
}
