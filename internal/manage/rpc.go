package manage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/store"
)

// Method names of seed 003.
const (
	MethodList      = "mcp/list"
	MethodInstall   = "mcp/install"
	MethodPolicySet = "mcp/policy/set"
	MethodRestart   = "mcp/server/restart"
	MethodUninstall = "mcp/uninstall"
	MethodDetails   = "mcp/server/details"
)

// JSON-RPC error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
)

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *RPCError) Error() string { return e.Message }

// rpcError maps a method's error to its JSON-RPC error.
func rpcError(err error) *RPCError {
	var ae *auth.Error
	switch {
	case errors.As(err, &ae):
		return &RPCError{Code: ae.Code, Message: ae.Message}
	case errors.Is(err, errInvalidParams):
		return &RPCError{Code: CodeInvalidParams, Message: err.Error()}
	case errors.Is(err, errNotFound):
		// A name that does not exist is a bad parameter.
		return &RPCError{Code: CodeInvalidParams, Message: strings.TrimPrefix(err.Error(), errNotFound.Error()+": ")}
	}
	return &RPCError{Code: CodeInternal, Message: err.Error()}
}

// IsMethod reports whether method is one the service serves (a prefix
// check: unknown mcp/* methods get -32601 from here, not from mcp-go).
func IsMethod(method string) bool { return strings.HasPrefix(method, "mcp/") }

// Handles implements endpoint.Management: IsMethod.
func (s *Service) Handles(method string) bool { return IsMethod(method) }

// Call runs one method; params may be empty.
func (s *Service) Call(ctx context.Context, method string, params json.RawMessage) (any, *RPCError) {
	if len(bytes.TrimSpace(params)) == 0 || string(bytes.TrimSpace(params)) == "null" {
		params = json.RawMessage(`{}`)
	}
	decode := func(v any) *RPCError {
		if err := json.Unmarshal(params, v); err != nil {
			return &RPCError{Code: CodeInvalidParams, Message: "invalid params: " + err.Error()}
		}
		return nil
	}
	var res any
	var err error
	switch method {
	case MethodList:
		var p Scope
		if e := decode(&p); e != nil {
			return nil, e
		}
		res, err = s.List(ctx, p)
	case MethodInstall:
		var p InstallParams
		if e := decode(&p); e != nil {
			return nil, e
		}
		if strings.TrimSpace(p.ConfigJSON) == "" {
			return nil, &RPCError{Code: CodeInvalidParams, Message: "invalid params: config_json is required (a string holding {\"mcpServers\": {...}})"}
		}
		res, err = s.Install(ctx, p)
	case MethodPolicySet:
		var p PolicyParams
		if e := decode(&p); e != nil {
			return nil, e
		}
		res, err = s.SetPolicy(ctx, p)
	case MethodRestart:
		var p NameParams
		if e := decode(&p); e != nil {
			return nil, e
		}
		res, err = s.Restart(ctx, p)
	case MethodUninstall:
		var p NameParams
		if e := decode(&p); e != nil {
			return nil, e
		}
		res, err = s.Uninstall(ctx, p)
	case MethodDisconnect:
		var p NameParams
		if e := decode(&p); e != nil {
			return nil, e
		}
		res, err = s.Disconnect(ctx, p)
	case MethodDetails:
		var p DetailsParams
		if e := decode(&p); e != nil {
			return nil, e
		}
		res, err = s.Details(ctx, p)
	default:
		return nil, &RPCError{Code: CodeMethodNotFound, Message: "method not found: " + method}
	}
	if err != nil {
		var ae *auth.Error
		if errors.As(err, &ae) {
			s.auditRefusal(ctx, identityOf(ctx), targetOf(params), method, ae)
		}
		return nil, rpcError(err)
	}
	return res, nil
}

// targetOf is the server a management request names ("" for none).
func targetOf(params json.RawMessage) string {
	var p struct {
		Name     string `json:"name"`
		ServerID string `json:"server_id"`
	}
	_ = json.Unmarshal(params, &p)
	if p.Name != "" {
		return p.Name
	}
	return p.ServerID
}

// auditRefusal records a management request refused for a scope or a
// server outside the caller's filter: allowed=false, the reason seed
// 004's message (which names the scope or server asked for, never whether
// it exists).
func (s *Service) auditRefusal(ctx context.Context, who auth.Identity, server, action string, e *auth.Error) {
	entry := store.AuditEntry{At: time.Now().UTC(), Server: server, Identity: who.Name, Action: action, Allowed: false,
		Reason: audit.ForbiddenReason(e), Outcome: audit.OutcomeDenied}
	s.appendAudit(ctx, entry)
}

// maxRequestBytes bounds a management request (config_json included).
const maxRequestBytes = 4 << 20

type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// WrapMCP serves the mcp/* methods on the MCP endpoint and passes every
// other request to next. mcp-go has no hook for unknown methods, so the
// body of a POST is read (bounded), routed by method, and restored for
// next when it is not ours.
func (s *Service) WrapMCP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
		_ = r.Body.Close()
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				w.Header().Set("Connection", "close")
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "cannot read request body", http.StatusBadRequest)
			return
		}
		var env envelope
		// A batch or anything that is not one JSON-RPC object is mcp-go's
		// to answer.
		if len(body) > maxRequestBytes || json.Unmarshal(body, &env) != nil || !IsMethod(env.Method) {
			if len(body) > maxRequestBytes {
				// The rest of the body is unread: the connection cannot
				// carry another request.
				w.Header().Set("Connection", "close")
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			next.ServeHTTP(w, r)
			return
		}
		if len(env.ID) == 0 || string(env.ID) == "null" {
			// A notification gets no answer.
			w.WriteHeader(http.StatusAccepted)
			return
		}
		resp := map[string]any{"jsonrpc": "2.0", "id": env.ID}
		if env.JSONRPC != "2.0" {
			resp["error"] = &RPCError{Code: CodeInvalidRequest, Message: `invalid request: jsonrpc must be "2.0"`}
		} else if res, rerr := s.Call(r.Context(), env.Method, env.Params); rerr != nil {
			resp["error"] = rerr
		} else {
			resp["result"] = res
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_ = json.NewEncoder(w).Encode(resp)
	})
}

// Events serves /events (see Notifier.Events).
func (s *Service) Events() http.Handler { return s.Notifier.Events(0) }
