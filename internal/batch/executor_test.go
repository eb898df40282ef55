package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/provider"
)

var quiet = slog.New(slog.DiscardHandler)

// fakeInvoker answers calls by tool name through its handler and records
// what it saw.
type fakeInvoker struct {
	handle func(ctx context.Context, rq *call.Request, server, tool string, args map[string]any) (*mcp.CallToolResult, error)

	mu       sync.Mutex
	seen     []string // "server/tool" in invocation order
	inflight int
	peak     int
	calls    atomic.Int64
}

func (f *fakeInvoker) invoke(ctx context.Context, rq *call.Request, server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	f.calls.Add(1)
	f.mu.Lock()
	f.seen = append(f.seen, server+"/"+tool)
	f.inflight++
	f.peak = max(f.peak, f.inflight)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inflight--
		f.mu.Unlock()
	}()
	return f.handle(ctx, rq, server, tool, args)
}

func newExecutor(f *fakeInvoker, lim Limits, cache *Cache) *Executor {
	return &Executor{Invoke: f.invoke, Limits: lim, Cache: cache, Log: quiet}
}

func text(s string) *mcp.CallToolResult { return mcp.NewToolResultText(s) }

// waitCtx blocks until ctx ends and reports it as the provider would.
func waitCtx(ctx context.Context, server string) (*mcp.CallToolResult, error) {
	<-ctx.Done()
	return nil, &provider.Error{Kind: provider.KindTimeout, ID: server, Detail: "no answer before the call timeout", Err: ctx.Err()}
}

func request(n int, conc int, timeout time.Duration) Request {
	r := Request{MaxConcurrency: conc, Timeout: timeout, MaxAttempts: 1}
	for i := range n {
		r.Calls = append(r.Calls, Call{Server: "s", Tool: fmt.Sprintf("t%d", i), Arguments: map[string]any{"i": i}})
	}
	return r
}

func TestRunKeepsOrderAndBoundsConcurrency(t *testing.T) {
	t.Parallel()
	const n = 12
	f := &fakeInvoker{handle: func(ctx context.Context, _ *call.Request, _, tool string, args map[string]any) (*mcp.CallToolResult, error) {
		i := args["i"].(int)
		time.Sleep(time.Duration(n-i) * 2 * time.Millisecond) // later calls finish first
		return text(fmt.Sprintf(`{"i":%d,"tool":%q}`, i, tool)), nil
	}}
	e := newExecutor(f, DefaultLimits(), NewCache(time.Minute, 1<<20))
	resp := e.Run(t.Context(), nil, request(n, 3, 10*time.Second))

	if resp.Total != n || resp.Succeeded != n || resp.Failed != 0 || !resp.Success {
		t.Fatalf("response = %+v", resp)
	}
	if !strings.HasPrefix(resp.BatchID, "batch-") {
		t.Errorf("batch id %q", resp.BatchID)
	}
	ids := map[string]bool{}
	for i, r := range resp.Results {
		if r.Index != i {
			t.Errorf("results[%d].Index = %d", i, r.Index)
		}
		want := map[string]any{"i": json.Number(fmt.Sprint(i)), "tool": fmt.Sprintf("t%d", i)}
		if jsonText(r.Result) != jsonText(want) {
			t.Errorf("results[%d].Result = %s, want %s", i, jsonText(r.Result), jsonText(want))
		}
		if !r.Success || r.Error != nil || r.ErrorType != nil || r.RetryMetadata != nil || r.Truncated {
			t.Errorf("results[%d] = %+v", i, r)
		}
		if !strings.HasPrefix(r.CallID, "call-") || ids[r.CallID] {
			t.Errorf("results[%d].CallID = %q (duplicate %v)", i, r.CallID, ids[r.CallID])
		}
		ids[r.CallID] = true
	}
	if f.peak > 3 || f.peak < 1 {
		t.Errorf("peak concurrency = %d, want 1..3", f.peak)
	}
}

func TestFromResult(t *testing.T) {
	t.Parallel()
	image := mcp.ImageContent{Type: "image", Data: "AAAA", MIMEType: "image/png"}
	tests := []struct {
		name     string
		res      *mcp.CallToolResult
		want     any
		wantErr  string
		wantKind string
	}{
		{"number text", text("3"), json.Number("3"), "", ""},
		{"negative float", text("-1.5e2"), json.Number("-1.5e2"), "", ""},
		{"object text", text(`{"a":[1,"x",null]}`), map[string]any{"a": []any{json.Number("1"), "x", nil}}, "", ""},
		{"json string", text(`"quoted"`), "quoted", "", ""},
		{"json true", text("true"), true, "", ""},
		{"json null", text("null"), nil, "", ""},
		{"plain text", text("hello world"), "hello world", "", ""},
		{"empty text", text(""), "", "", ""},
		{"almost json", text(`{"a":1`), `{"a":1`, "", ""},
		{"two json values", text("1 2"), "1 2", "", ""},
		{"structured wins", &mcp.CallToolResult{StructuredContent: map[string]any{"s": 1}, Content: []mcp.Content{mcp.NewTextContent("ignored")}}, map[string]any{"s": 1}, "", ""},
		{"several contents", &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("a"), mcp.NewTextContent("b")}}, []mcp.Content{mcp.NewTextContent("a"), mcp.NewTextContent("b")}, "", ""},
		{"image content", &mcp.CallToolResult{Content: []mcp.Content{image}}, []mcp.Content{image}, "", ""},
		{"no content", &mcp.CallToolResult{}, []mcp.Content(nil), "", ""},
		{"tool error", &mcp.CallToolResult{IsError: true, Content: []mcp.Content{mcp.NewTextContent("bad input"), mcp.NewTextContent("line 2")}}, nil, "bad input\nline 2", provider.KindToolError},
		{"tool error without text", &mcp.CallToolResult{IsError: true}, nil, "tool reported an error with no text", provider.KindToolError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := fromResult(tt.res)
			if tt.wantKind != "" {
				if r.Success || r.ErrorType == nil || *r.ErrorType != tt.wantKind || r.Error == nil || *r.Error != tt.wantErr {
					t.Errorf("result = %+v, want failure %q %q", r, tt.wantKind, tt.wantErr)
				}
				return
			}
			if !r.Success || r.Error != nil {
				t.Fatalf("result = %+v, want success", r)
			}
			// What counts is the answer's JSON: a JSON text is carried raw.
			got, err1 := json.Marshal(r.Result)
			want, err2 := json.Marshal(tt.want)
			if err1 != nil || err2 != nil || string(got) != string(want) {
				t.Errorf("Result = %s (%#v), want %s", got, r.Result, want)
			}
		})
	}
}

// A JSON text is passed on as it is, not decoded and encoded again.
func TestFromResultKeepsJSONRaw(t *testing.T) {
	t.Parallel()
	r := fromResult(text(`{"z":1,"a":[2,3]}`))
	raw, ok := r.Result.(json.RawMessage)
	if !ok || string(raw) != `{"z":1,"a":[2,3]}` {
		t.Errorf("Result = %#v, want the raw JSON", r.Result)
	}
}

// TestFromResultKeepsIntegerPrecision: integers beyond 2^53 (snowflake
// IDs, nanosecond timestamps) in a text result come back exactly, as
// Python's json.loads, whose behaviour hangar_call mirrors, keeps them.
func TestFromResultKeepsIntegerPrecision(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"9007199254740993", `{"id":1234567890123456789}`} {
		r := fromResult(text(s))
		b, err := json.Marshal(r.Result)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != s {
			t.Errorf("%s came back as %s", s, b)
		}
	}
}

func TestFailFast(t *testing.T) {
	t.Parallel()
	t.Run("queued calls are cancelled", func(t *testing.T) {
		t.Parallel()
		f := &fakeInvoker{handle: func(_ context.Context, _ *call.Request, _, tool string, _ map[string]any) (*mcp.CallToolResult, error) {
			if tool == "t0" {
				return nil, provider.Errorf(provider.KindToolNotAllowed, "s.t0", "blocked")
			}
			return text("ok"), nil
		}}
		req := request(4, 1, 10*time.Second)
		req.FailFast = true
		resp := newExecutor(f, DefaultLimits(), nil).Run(t.Context(), nil, req)
		if got := f.calls.Load(); got != 1 {
			t.Errorf("invocations = %d, want 1", got)
		}
		if resp.Success || resp.Failed != 4 || resp.Succeeded != 0 {
			t.Errorf("response = %+v", resp)
		}
		if k := *resp.Results[0].ErrorType; k != provider.KindToolNotAllowed {
			t.Errorf("results[0] kind = %q", k)
		}
		for i, r := range resp.Results[1:] {
			if r.ErrorType == nil || *r.ErrorType != ErrTypeCancelled || !strings.Contains(*r.Error, "fail_fast") {
				t.Errorf("results[%d] = %+v, want cancelled by fail_fast", i+1, r)
			}
		}
	})
	t.Run("running calls are cancelled", func(t *testing.T) {
		t.Parallel()
		started := make(chan struct{}, 3)
		f := &fakeInvoker{handle: func(ctx context.Context, _ *call.Request, server, tool string, _ map[string]any) (*mcp.CallToolResult, error) {
			if tool == "t0" {
				for range 3 {
					<-started
				}
				return nil, errors.New("transport broke")
			}
			started <- struct{}{}
			return waitCtx(ctx, server)
		}}
		req := request(4, 4, 10*time.Second)
		req.FailFast = true
		began := time.Now()
		resp := newExecutor(f, DefaultLimits(), nil).Run(t.Context(), nil, req)
		if d := time.Since(began); d > 5*time.Second {
			t.Errorf("fail_fast batch took %v", d)
		}
		if resp.Failed != 4 {
			t.Errorf("failed = %d, want 4", resp.Failed)
		}
		if k := *resp.Results[0].ErrorType; k != provider.KindCallFailed {
			t.Errorf("results[0] kind = %q", k)
		}
	})
	t.Run("without fail_fast the others run", func(t *testing.T) {
		t.Parallel()
		f := &fakeInvoker{handle: func(_ context.Context, _ *call.Request, _, tool string, _ map[string]any) (*mcp.CallToolResult, error) {
			if tool == "t0" {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{mcp.NewTextContent("nope")}}, nil
			}
			return text("1"), nil
		}}
		resp := newExecutor(f, DefaultLimits(), nil).Run(t.Context(), nil, request(4, 1, 10*time.Second))
		if resp.Succeeded != 3 || resp.Failed != 1 || resp.Success {
			t.Errorf("response = %+v", resp)
		}
		if r := resp.Results[0]; *r.ErrorType != provider.KindToolError || *r.Error != "nope" {
			t.Errorf("results[0] = %+v", r)
		}
	})
}

func TestPerCallTimeout(t *testing.T) {
	t.Parallel()
	var deadline atomic.Value
	f := &fakeInvoker{handle: func(ctx context.Context, _ *call.Request, server, tool string, _ map[string]any) (*mcp.CallToolResult, error) {
		if tool == "slow" {
			d, _ := ctx.Deadline()
			deadline.Store(d)
			return waitCtx(ctx, server)
		}
		return text(`"fast"`), nil
	}}
	req := Request{MaxConcurrency: 2, Timeout: 10 * time.Second, MaxAttempts: 1, Calls: []Call{
		{Server: "s", Tool: "slow", Timeout: 50 * time.Millisecond},
		{Server: "s", Tool: "fast"},
	}}
	began := time.Now()
	resp := newExecutor(f, DefaultLimits(), nil).Run(t.Context(), nil, req)
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("batch took %v; the per-call timeout did not apply", d)
	}
	if d := deadline.Load().(time.Time).Sub(began); d > time.Second {
		t.Errorf("slow call deadline %v after start, want about 50ms", d)
	}
	if r := resp.Results[0]; r.Success || *r.ErrorType != provider.KindTimeout {
		t.Errorf("slow = %+v", r)
	}
	if r := resp.Results[1]; !r.Success || r.Result != "fast" {
		t.Errorf("fast = %+v", r)
	}
}

func TestBatchTimeout(t *testing.T) {
	t.Parallel()
	f := &fakeInvoker{handle: func(ctx context.Context, _ *call.Request, server, _ string, _ map[string]any) (*mcp.CallToolResult, error) {
		return waitCtx(ctx, server)
	}}
	req := request(3, 1, 100*time.Millisecond)
	began := time.Now()
	resp := newExecutor(f, DefaultLimits(), nil).Run(t.Context(), nil, req)
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("batch took %v, timeout 100ms", d)
	}
	if resp.Failed != 3 || resp.Success {
		t.Fatalf("response = %+v", resp)
	}
	if got := f.calls.Load(); got != 1 {
		t.Errorf("invocations = %d, want 1 (the rest never ran)", got)
	}
	if r := resp.Results[0]; *r.ErrorType != provider.KindTimeout {
		t.Errorf("running call = %+v", r)
	}
	for i, r := range resp.Results[1:] {
		if *r.ErrorType != ErrTypeCancelled || !strings.Contains(*r.Error, "batch timeout") {
			t.Errorf("results[%d] = %q %q", i+1, *r.ErrorType, *r.Error)
		}
	}
}

func TestCallerCancelsBatch(t *testing.T) {
	t.Parallel()
	f := &fakeInvoker{handle: func(ctx context.Context, _ *call.Request, server, _ string, _ map[string]any) (*mcp.CallToolResult, error) {
		return waitCtx(ctx, server)
	}}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		time.Sleep(30 * time.Millisecond)
		cancel()
	}()
	began := time.Now()
	resp := newExecutor(f, DefaultLimits(), nil).Run(ctx, nil, request(2, 1, 10*time.Second))
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("cancelled batch took %v", d)
	}
	if resp.Failed != 2 {
		t.Errorf("response = %+v", resp)
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()
	kindErr := func(kind string) error { return &provider.Error{Kind: kind, ID: "s", Detail: "x"} }
	tests := []struct {
		name         string
		err          error // returned by the first failing attempts
		failures     int   // attempts that fail before one succeeds
		maxAttempts  int
		wantAttempts int
		wantSuccess  bool
		wantKind     string
	}{
		{"crash then success", kindErr(provider.KindCrashed), 2, 3, 3, true, ""},
		{"call_failed retried", kindErr(provider.KindCallFailed), 1, 3, 2, true, ""},
		{"busy retried", kindErr(provider.KindBusy), 1, 2, 2, true, ""},
		{"unavailable retried", kindErr(provider.KindUnavailable), 1, 2, 2, true, ""},
		{"stopped retried", kindErr(provider.KindStopped), 1, 2, 2, true, ""},
		{"plain error is call_failed, retried", errors.New("eof"), 1, 2, 2, true, ""},
		{"attempts exhausted", kindErr(provider.KindCrashed), 5, 2, 2, false, provider.KindCrashed},
		{"timeout not retried", kindErr(provider.KindTimeout), 5, 3, 1, false, provider.KindTimeout},
		{"tool_not_allowed not retried", kindErr(provider.KindToolNotAllowed), 5, 3, 1, false, provider.KindToolNotAllowed},
		{"unknown server not retried", kindErr(provider.KindUnknownServer), 5, 3, 1, false, provider.KindUnknownServer},
		{"start_failed not retried", kindErr(provider.KindStartFailed), 5, 3, 1, false, provider.KindStartFailed},
		{"no retries allowed", kindErr(provider.KindCrashed), 5, 1, 1, false, provider.KindCrashed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int64
			f := &fakeInvoker{handle: func(context.Context, *call.Request, string, string, map[string]any) (*mcp.CallToolResult, error) {
				if int(n.Add(1)) <= tt.failures {
					return nil, tt.err
				}
				return text("42"), nil
			}}
			req := request(1, 1, 10*time.Second)
			req.MaxAttempts = tt.maxAttempts
			r := newExecutor(f, DefaultLimits(), nil).Run(t.Context(), nil, req).Results[0]
			if got := int(n.Load()); got != tt.wantAttempts {
				t.Errorf("invocations = %d, want %d", got, tt.wantAttempts)
			}
			if r.Success != tt.wantSuccess {
				t.Errorf("success = %v, want %v (%+v)", r.Success, tt.wantSuccess, r)
			}
			if tt.wantSuccess && jsonText(r.Result) != "42" {
				t.Errorf("result = %#v", r.Result)
			}
			if !tt.wantSuccess && (r.ErrorType == nil || *r.ErrorType != tt.wantKind) {
				t.Errorf("error type = %v, want %q", r.ErrorType, tt.wantKind)
			}
			if tt.maxAttempts == 1 {
				if r.RetryMetadata != nil {
					t.Errorf("retry_metadata = %+v with max_attempts 1", r.RetryMetadata)
				}
				return
			}
			want := &RetryMeta{Attempts: tt.wantAttempts, Retries: tt.wantAttempts - 1}
			if !reflect.DeepEqual(r.RetryMetadata, want) {
				t.Errorf("retry_metadata = %+v, want %+v", r.RetryMetadata, want)
			}
		})
	}
}

func TestToolErrorIsNotRetried(t *testing.T) {
	t.Parallel()
	f := &fakeInvoker{handle: func(context.Context, *call.Request, string, string, map[string]any) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("invalid argument"), nil
	}}
	req := request(1, 1, 10*time.Second)
	req.MaxAttempts = 5
	r := newExecutor(f, DefaultLimits(), nil).Run(t.Context(), nil, req).Results[0]
	if f.calls.Load() != 1 || r.Success || *r.ErrorType != provider.KindToolError || *r.Error != "invalid argument" {
		t.Errorf("result = %+v after %d calls", r, f.calls.Load())
	}
	if want := (&RetryMeta{Attempts: 1, Retries: 0}); !reflect.DeepEqual(r.RetryMetadata, want) {
		t.Errorf("retry_metadata = %+v, want %+v", r.RetryMetadata, want)
	}
}

// TestRetryCutByBatchTimeout: when the batch timeout ends during the wait
// before a retry, runOne counts one more attempt than it made and replaces
// the real failure with "cancelled: the batch timeout passed before the
// call could run", although the call did run.
func TestRetryCutByBatchTimeout(t *testing.T) {
	t.Parallel()
	f := &fakeInvoker{handle: func(context.Context, *call.Request, string, string, map[string]any) (*mcp.CallToolResult, error) {
		return nil, &provider.Error{Kind: provider.KindCrashed, ID: "s", Detail: "exit 1"}
	}}
	req := request(1, 1, 200*time.Millisecond) // attempts at 0 and 100ms; the wait until 300ms is cut
	req.MaxAttempts = 5
	r := newExecutor(f, DefaultLimits(), nil).Run(t.Context(), nil, req).Results[0]
	made := int(f.calls.Load())
	if made < 1 || made > 2 {
		t.Fatalf("invocations = %d, want 2", made)
	}
	if r.RetryMetadata == nil || r.RetryMetadata.Attempts != made || r.RetryMetadata.Retries != made-1 {
		t.Errorf("retry_metadata = %+v, want %d attempts made", r.RetryMetadata, made)
	}
	if r.ErrorType == nil || *r.ErrorType != provider.KindCrashed {
		t.Errorf("error = %v %v, want the last real failure (%s)", deref(r.ErrorType), deref(r.Error), provider.KindCrashed)
	}
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func TestTruncation(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("abcdefghij", 25) // 250 bytes
	obj := map[string]any{"data": strings.Repeat("x", 200)}
	objJSON, _ := json.Marshal(obj)
	f := &fakeInvoker{handle: func(_ context.Context, _ *call.Request, _, tool string, _ map[string]any) (*mcp.CallToolResult, error) {
		switch tool {
		case "t0":
			return text(big), nil
		case "t1":
			return text(string(objJSON)), nil
		case "t2":
			return text(strings.Repeat("é", 60)), nil // 120 bytes, 2 per rune
		}
		return text("small"), nil
	}}
	lim := DefaultLimits()
	lim.MaxResponseBytes = 101
	cache := NewCache(time.Minute, 1<<20)
	resp := newExecutor(f, lim, cache).Run(t.Context(), nil, request(4, 1, 10*time.Second))

	r := resp.Results[0]
	if !r.Success || !r.Truncated || r.TotalSizeBytes != 250 || r.Result != big[:101] {
		t.Errorf("string result = %+v", r)
	}
	if !strings.HasPrefix(r.ContinuationID, ContinuationPrefix) {
		t.Errorf("continuation id %q", r.ContinuationID)
	}
	if data, ok := cache.Get(localOwner, r.ContinuationID); !ok || data != big {
		t.Errorf("cache holds %d bytes (found %v), want the full result", len(data), ok)
	}

	r = resp.Results[1]
	if !r.Truncated || r.TotalSizeBytes != len(objJSON) || r.Result != string(objJSON[:101]) {
		t.Errorf("object result = %+v", r)
	}
	if data, _ := cache.Get(localOwner, r.ContinuationID); data != string(objJSON) {
		t.Errorf("cached object = %q", data)
	}

	r = resp.Results[2]
	s, _ := r.Result.(string)
	if !r.Truncated || len(s) != 100 || !utf8.ValidString(s) {
		t.Errorf("UTF-8 result cut to %d bytes (valid %v), want 100 valid bytes", len(s), utf8.ValidString(s))
	}

	r = resp.Results[3]
	if r.Truncated || r.ContinuationID != "" || r.Result != "small" {
		t.Errorf("small result = %+v", r)
	}
	if cache.Len() != 3 {
		t.Errorf("cache entries = %d, want 3", cache.Len())
	}
}

func TestTruncationNeedsCache(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("z", 500)
	f := &fakeInvoker{handle: func(context.Context, *call.Request, string, string, map[string]any) (*mcp.CallToolResult, error) {
		return text(big), nil
	}}
	lim := DefaultLimits()
	lim.MaxResponseBytes = 10
	r := newExecutor(f, lim, nil).Run(t.Context(), nil, request(1, 1, 10*time.Second)).Results[0]
	if r.Truncated || r.Result != big {
		t.Errorf("without a cache the result must be returned whole: truncated %v, %d bytes", r.Truncated, len(fmt.Sprint(r.Result)))
	}
}

func TestTotalResponseSizeCap(t *testing.T) {
	t.Parallel()
	payload := strings.Repeat("p", 2000)
	f := &fakeInvoker{handle: func(context.Context, *call.Request, string, string, map[string]any) (*mcp.CallToolResult, error) {
		return text(payload), nil
	}}
	lim := DefaultLimits()
	lim.MaxResponseBytes = 5000
	lim.MaxTotalRespBytes = 3000
	cache := NewCache(time.Minute, 1<<20)
	// One at a time, so the order in which the budget is spent is known.
	resp := newExecutor(f, lim, cache).Run(t.Context(), nil, request(3, 1, 10*time.Second))

	if r := resp.Results[0]; r.Truncated || r.Result != payload {
		t.Errorf("first result (within the total) truncated: %+v", r.Truncated)
	}
	for i, r := range resp.Results[1:] {
		s, _ := r.Result.(string)
		// Over the batch total: a preview of truncatedPreviewBytes.
		if !r.Truncated || len(s) != truncatedPreviewBytes || r.TotalSizeBytes != 2000 || r.ContinuationID == "" {
			t.Errorf("results[%d]: truncated %v, %d bytes inline, total %d", i+1, r.Truncated, len(s), r.TotalSizeBytes)
		}
		if data, ok := cache.Get(localOwner, r.ContinuationID); !ok || data != payload {
			t.Errorf("results[%d]: cached data missing", i+1)
		}
	}
}

func TestCutUTF8(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"héllo", 2, "h"}, // é is 2 bytes at 1..2
		{"héllo", 3, "hé"},
		{"日本", 4, "日"},
		{"日本", 2, ""},
		{"x", 0, ""},
	}
	for _, tt := range tests {
		if got := cutUTF8(tt.s, tt.n); got != tt.want {
			t.Errorf("cutUTF8(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func TestInvalidResponse(t *testing.T) {
	t.Parallel()
	_, errs := Parse(map[string]any{}, DefaultLimits())
	resp := Invalid(errs)
	if resp.Success || resp.Total != 0 || len(resp.Results) != 0 || len(resp.ValidationErrors) != 1 {
		t.Errorf("Invalid = %+v", resp)
	}
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["results"]; ok {
		t.Errorf("results present in %s", b)
	}
	ve := m["validation_errors"].([]any)[0].(map[string]any)
	if ve["index"] != nil || ve["field"] != "calls" {
		t.Errorf("validation error JSON = %v", ve)
	}
}

func TestTruncationWhenTheStoreIsFull(t *testing.T) {
	t.Parallel()
	f := &fakeInvoker{handle: func(context.Context, *call.Request, string, string, map[string]any) (*mcp.CallToolResult, error) {
		return text(strings.Repeat("q", 300)), nil
	}}
	lim := DefaultLimits()
	lim.MaxResponseBytes = 100
	cache := NewCache(time.Minute, 500) // room for one 300-byte result
	resp := newExecutor(f, lim, cache).Run(t.Context(), nil, request(2, 1, 10*time.Second))

	if r := resp.Results[0]; !r.Success || !r.Truncated || r.ContinuationID == "" {
		t.Errorf("first result should fit the store: %+v", r)
	}
	r := resp.Results[1]
	if r.Success || r.ErrorType == nil || *r.ErrorType != ErrTypeContinuationFull || r.Error == nil ||
		!strings.Contains(*r.Error, "continuation store is full") || r.Index != 1 || r.CallID == "" {
		t.Errorf("second result = %+v, want a continuation_full failure keeping its index and call id", r)
	}
	if resp.Success || resp.Failed != 1 || resp.Succeeded != 1 {
		t.Errorf("batch success %v, %d failed, %d succeeded", resp.Success, resp.Failed, resp.Succeeded)
	}
	if cache.Bytes() != 300 {
		t.Errorf("store holds %d bytes, want 300", cache.Bytes())
	}
}

func TestBigJSONTextIsNotDecoded(t *testing.T) {
	t.Parallel()
	// Spaces and key order a decode-and-encode would change: over the
	// limit, the continuation keeps the provider's text as it was.
	raw := `{"b": 1, "a": [` + strings.Repeat(`1, `, 100) + `2]}`
	f := &fakeInvoker{handle: func(context.Context, *call.Request, string, string, map[string]any) (*mcp.CallToolResult, error) {
		return text(raw), nil
	}}
	lim := DefaultLimits()
	lim.MaxResponseBytes = 50
	cache := NewCache(time.Minute, 1<<20)
	r := newExecutor(f, lim, cache).Run(t.Context(), nil, request(1, 1, 10*time.Second)).Results[0]
	if data, _ := cache.Get(localOwner, r.ContinuationID); data != raw {
		t.Errorf("continuation = %.80q, want the provider's text", data)
	}
	if r.Result != raw[:50] {
		t.Errorf("inline result = %q", r.Result)
	}
}

// jsonText is v as the answer carries it; results compare by their JSON.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(b)
}
