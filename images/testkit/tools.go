package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

const (
	maxBigBytes = 64 << 20
	// maxAllocMiB only keeps the conversion to int safe; any real memory
	// limit is hit long before it.
	maxAllocMiB = 1 << 20
	pageSize    = 4096
)

// schemaToolInput uses anyOf on purpose: gateways that rebuild schemas through
// a typed model tend to drop it, and the schema tool exists to catch that.
const schemaToolInput = `{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"number"}]}}}`

// retained keeps the alloc tool's memory reachable for the life of the
// process, so the garbage collector cannot hand it back before the kernel's
// memory limit is hit.
var retained struct {
	sync.Mutex
	chunks [][]byte
}

func registerTools(s *server.MCPServer) {
	s.AddTool(mcp.NewTool("echo",
		mcp.WithDescription("Return the given text unchanged"),
		mcp.WithString("text", mcp.Required(), mcp.Description("Text to return")),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		text, err := req.RequireString("text")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(text), nil
	})

	s.AddTool(mcp.NewTool("echo_meta",
		mcp.WithDescription("Return the _meta of this request and its traceparent header (over HTTP) as JSON"),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		out := map[string]any{"meta": map[string]any{}, "traceparent_header": req.Header.Get("traceparent")}
		if m := req.Params.Meta; m != nil {
			meta := map[string]any{}
			for k, v := range m.AdditionalFields {
				meta[k] = v
			}
			if m.ProgressToken != nil {
				meta["progressToken"] = m.ProgressToken
			}
			out["meta"] = meta
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, err
		}
		return mcp.NewToolResultText(string(b)), nil
	})

	s.AddTool(mcp.NewTool("sleep",
		mcp.WithDescription("Sleep for the given number of milliseconds"),
		mcp.WithNumber("ms", mcp.Required(), mcp.Min(0), mcp.Description("Milliseconds to sleep")),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ms, err := req.RequireFloat("ms")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		if ms < 0 {
			return mcp.NewToolResultError("ms must not be negative"), nil
		}
		timer := time.NewTimer(time.Duration(ms * float64(time.Millisecond)))
		defer timer.Stop()
		select {
		case <-timer.C:
			return mcp.NewToolResultText("slept " + formatNumber(ms) + " ms"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})

	s.AddTool(mcp.NewTool("fail",
		mcp.WithDescription("Return a tool error"),
		mcp.WithString("message", mcp.DefaultString("requested failure"), mcp.Description("Error text")),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError(req.GetString("message", "requested failure")), nil
	})

	s.AddTool(mcp.NewTool("crash",
		mcp.WithDescription("Exit the process at once with the given code, without answering"),
		mcp.WithNumber("code", mcp.DefaultNumber(1), mcp.Min(0), mcp.Max(255), mcp.Description("Exit code")),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		code, err := wholeNumber("code", req.GetFloat("code", 1), 255)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		fmt.Fprintf(os.Stderr, "testkit: crashing with code %d\n", code)
		os.Exit(code)
		return nil, nil
	})

	s.AddTool(mcp.NewTool("big",
		mcp.WithDescription("Return a text of exactly the given size"),
		mcp.WithNumber("bytes", mcp.Required(), mcp.Min(0), mcp.Max(maxBigBytes), mcp.Description("Size of the text in bytes")),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n, err := requireCount(req, "bytes", maxBigBytes)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(strings.Repeat("x", n)), nil
	})

	s.AddTool(mcp.NewTool("env",
		mcp.WithDescription("Return the value of an environment variable, empty if unset"),
		mcp.WithString("name", mcp.Required(), mcp.Description("Variable name")),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		name, err := req.RequireString("name")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(os.Getenv(name)), nil
	})

	s.AddTool(mcp.NewTool("stderr",
		mcp.WithDescription("Write a line to standard error"),
		mcp.WithString("text", mcp.Required(), mcp.Description("Line to write")),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		text, err := req.RequireString("text")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		if _, err := fmt.Fprintln(os.Stderr, text); err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText("ok"), nil
	})

	s.AddTool(mcp.NewTool("alloc",
		mcp.WithDescription("Allocate and keep the given number of MiB"),
		mcp.WithNumber("mb", mcp.Required(), mcp.Min(0), mcp.Max(maxAllocMiB), mcp.Description("MiB to allocate")),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mb, err := requireCount(req, "mb", maxAllocMiB)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		retained.Lock()
		defer retained.Unlock()
		// One MiB at a time, so memory grows steadily towards the limit
		// instead of failing on a single huge reservation.
		for range mb {
			chunk := make([]byte, 1<<20)
			// Untouched pages are never backed by real memory, so write to
			// each one to make the allocation count against the limit.
			for i := 0; i < len(chunk); i += pageSize {
				chunk[i] = 1
			}
			retained.chunks = append(retained.chunks, chunk)
		}
		return mcp.NewToolResultText(fmt.Sprintf("allocated %d MiB", mb)), nil
	})

	// Not mcp.NewTool plus WithRawInputSchema: NewTool presets a typed
	// object schema, and a tool carrying both fails to marshal, which breaks
	// tools/list as a whole.
	s.AddTool(mcp.NewToolWithRawSchema("schema",
		"Return the raw arguments as JSON; its input schema uses anyOf",
		json.RawMessage(schemaToolInput),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := json.Marshal(req.GetRawArguments())
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(string(args)), nil
	})

	registerFrontDoorTools(s)
}

// requireCount reads a required argument that must be a whole number from 0
// to limit.
func requireCount(req mcp.CallToolRequest, key string, limit int) (int, error) {
	v, err := req.RequireFloat(key)
	if err != nil {
		return 0, err
	}
	return wholeNumber(key, v, limit)
}

// wholeNumber checks v before it is converted, since JSON numbers arrive as
// float64 and a fraction or huge value would otherwise be silently mangled.
func wholeNumber(key string, v float64, limit int) (int, error) {
	if v < 0 || v > float64(limit) || v != math.Trunc(v) {
		return 0, fmt.Errorf("%s must be a whole number from 0 to %d", key, limit)
	}
	return int(v), nil
}

func formatNumber(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}
