// Package batch runs hangar_call: validation, parallel execution with
// per-batch and per-call timeouts, retries, fail-fast, and truncation of
// large results into the continuation cache. In the data flow it sits
// between the hangar_call tool (internal/gateway) and the call path
// (Invoker: the gateway's callServer), each entry with its own attempt
// budget in its call.Request; its limits come from the config's batch
// section (LimitsFor, NewCacheFor).
package batch

import (
	"fmt"
	"math"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
)

// Limits are the batch section of the config.
type Limits struct {
	MaxCalls           int
	MaxConcurrency     int
	DefaultTimeout     time.Duration
	MaxTimeout         time.Duration
	MaxResponseBytes   int
	MaxTotalRespBytes  int
	DefaultConcurrency int
	MaxAttempts        int
}

// DefaultLimits are those of seed 001.
func DefaultLimits() Limits {
	return Limits{
		MaxCalls: 100, MaxConcurrency: 50, DefaultTimeout: 60 * time.Second, MaxTimeout: 300 * time.Second,
		MaxResponseBytes: 10 << 20, MaxTotalRespBytes: 50 << 20, DefaultConcurrency: 10, MaxAttempts: 10,
	}
}

// LimitsFor are the limits the config's batch section sets, seed 001's
// where it sets none.
func LimitsFor(b config.Batch) Limits {
	l := DefaultLimits()
	if b.MaxCalls > 0 {
		l.MaxCalls = b.MaxCalls
	}
	if b.MaxConcurrency > 0 {
		l.MaxConcurrency = b.MaxConcurrency
	}
	if b.DefaultTimeout > 0 {
		l.DefaultTimeout = b.DefaultTimeout
	}
	if b.MaxTimeout > 0 {
		l.MaxTimeout = b.MaxTimeout
	}
	if b.MaxResponseSizeBytes > 0 {
		l.MaxResponseBytes = b.MaxResponseSizeBytes
	}
	if b.MaxTotalResponseSizeByte > 0 {
		l.MaxTotalRespBytes = b.MaxTotalResponseSizeByte
	}
	l.DefaultConcurrency = min(l.DefaultConcurrency, l.MaxConcurrency)
	return l
}

// Call is one validated call of a batch.
type Call struct {
	Server    string
	Tool      string
	Arguments map[string]any
	Timeout   time.Duration // 0: the batch timeout
}

// Request is a validated hangar_call.
type Request struct {
	Calls          []Call
	MaxConcurrency int
	Timeout        time.Duration
	FailFast       bool
	MaxAttempts    int
}

// ValidationError is one problem with the input; Index is nil for a
// problem with a batch-level parameter.
type ValidationError struct {
	Index   *int   `json:"index"`
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Parse validates hangar_call's raw arguments. Every problem is reported,
// not just the first.
func Parse(args map[string]any, lim Limits) (Request, []ValidationError) {
	var errs []ValidationError
	bad := func(idx *int, field, format string, a ...any) {
		errs = append(errs, ValidationError{Index: idx, Field: field, Message: fmt.Sprintf(format, a...)})
	}
	req := Request{MaxConcurrency: lim.DefaultConcurrency, Timeout: lim.DefaultTimeout, MaxAttempts: 1}

	if v, ok := args["max_concurrency"]; ok && v != nil {
		if n, ok := wholeNumber(v); !ok || n < 1 || n > int64(lim.MaxConcurrency) {
			bad(nil, "max_concurrency", "must be an integer 1..%d (got %v)", lim.MaxConcurrency, v)
		} else {
			req.MaxConcurrency = int(n)
		}
	}
	maxT := lim.MaxTimeout.Seconds()
	if v, ok := args["timeout"]; ok && v != nil {
		if f, ok := v.(float64); !ok || f < 1 || f > maxT || math.IsNaN(f) {
			bad(nil, "timeout", "must be a number of seconds 1..%g (got %v)", maxT, v)
		} else {
			req.Timeout = seconds(f)
		}
	}
	if v, ok := args["fail_fast"]; ok && v != nil {
		if b, ok := v.(bool); !ok {
			bad(nil, "fail_fast", "must be a boolean (got %v)", v)
		} else {
			req.FailFast = b
		}
	}
	if v, ok := args["max_attempts"]; ok && v != nil {
		if n, ok := wholeNumber(v); !ok || n < 1 || n > int64(lim.MaxAttempts) {
			bad(nil, "max_attempts", "must be an integer 1..%d (got %v)", lim.MaxAttempts, v)
		} else {
			req.MaxAttempts = int(n)
		}
	}

	raw, ok := args["calls"].([]any)
	switch {
	case args["calls"] == nil:
		bad(nil, "calls", "is required")
	case !ok:
		bad(nil, "calls", "must be a list of {mcp_server, tool, arguments, timeout?} objects")
	case len(raw) < 1 || len(raw) > lim.MaxCalls:
		bad(nil, "calls", "must have 1..%d items (got %d)", lim.MaxCalls, len(raw))
	}
	if len(raw) > lim.MaxCalls {
		raw = nil
	}
	for i, item := range raw {
		idx := i
		obj, ok := item.(map[string]any)
		if !ok {
			bad(&idx, "calls", "must be an object")
			continue
		}
		c := Call{Arguments: map[string]any{}}
		for k := range obj {
			switch k {
			case "mcp_server", "tool", "arguments", "timeout":
			default:
				bad(&idx, k, "unknown field (want mcp_server, tool, arguments, timeout)")
			}
		}
		if s, ok := obj["mcp_server"].(string); !ok || s == "" {
			bad(&idx, "mcp_server", "must be a non-empty string")
		} else {
			c.Server = s
		}
		if s, ok := obj["tool"].(string); !ok || s == "" {
			bad(&idx, "tool", "must be a non-empty string")
		} else {
			c.Tool = s
		}
		if a, ok := obj["arguments"]; ok && a != nil {
			if m, ok := a.(map[string]any); !ok {
				bad(&idx, "arguments", "must be an object")
			} else {
				c.Arguments = m
			}
		}
		if t, ok := obj["timeout"]; ok && t != nil {
			if f, ok := t.(float64); !ok || f < 1 || f > maxT || math.IsNaN(f) {
				bad(&idx, "timeout", "must be a number of seconds 1..%g (got %v)", maxT, t)
			} else {
				c.Timeout = seconds(f)
			}
		}
		req.Calls = append(req.Calls, c)
	}
	return req, errs
}

func wholeNumber(v any) (int64, bool) {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return int64(f), true
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
