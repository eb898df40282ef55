package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/cenkalti/backoff/v5"
	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/retry"
)

// Invoker calls one tool on one server (or group) by ID, for rq: the
// hangar_call's request with the entry's attempt budget.
type Invoker func(ctx context.Context, rq *call.Request, server, tool string, args map[string]any) (*mcp.CallToolResult, error)

// Result of one call, as hangar_call reports it.
type Result struct {
	Index          int        `json:"index"`
	CallID         string     `json:"call_id"`
	Success        bool       `json:"success"`
	Result         any        `json:"result"`
	Error          *string    `json:"error"`
	ErrorType      *string    `json:"error_type"`
	ElapsedMs      float64    `json:"elapsed_ms"`
	Truncated      bool       `json:"truncated,omitempty"`
	ContinuationID string     `json:"continuation_id,omitempty"`
	TotalSizeBytes int        `json:"total_size_bytes,omitempty"`
	RetryMetadata  *RetryMeta `json:"retry_metadata,omitempty"`
}

// RetryMeta is present on results of calls that were allowed retries.
type RetryMeta struct {
	Attempts int `json:"attempts"`
	Retries  int `json:"retries"`
}

// Response of hangar_call.
type Response struct {
	BatchID          string            `json:"batch_id"`
	Success          bool              `json:"success"`
	Total            int               `json:"total"`
	Succeeded        int               `json:"succeeded"`
	Failed           int               `json:"failed"`
	ElapsedMs        float64           `json:"elapsed_ms"`
	Results          []Result          `json:"results,omitempty"`
	ValidationErrors []ValidationError `json:"validation_errors,omitempty"`
}

// Error types of results that are not provider errors.
const (
	ErrTypeCancelled = "cancelled"
	// ErrTypeContinuationFull: the result was over the size limit and the
	// continuation store had no room for it.
	ErrTypeContinuationFull = "continuation_full"
)

// truncatedPreviewBytes is how much of a result is shown inline once the
// batch as a whole is over its total size limit.
const truncatedPreviewBytes = 1024

// Executor runs batches.
type Executor struct {
	Invoke Invoker
	Limits Limits
	Cache  *Cache
	Log    *slog.Logger
}

// Invalid builds the response for input that failed validation.
func Invalid(errs []ValidationError) Response {
	return Response{BatchID: "batch-" + randomHex(8), Total: 0, ValidationErrors: errs}
}

// Run executes a validated request for the hangar_call rq (its caller owns
// the continuations; nil: a local caller). Results keep the order of the
// calls.
func (e *Executor) Run(ctx context.Context, rq *call.Request, req Request) Response {
	began := time.Now()
	resp := Response{BatchID: "batch-" + randomHex(8), Total: len(req.Calls), Results: make([]Result, len(req.Calls))}
	owner := OwnerOf(rq.CallerOr())

	ctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	if len(req.Calls) == 1 {
		// The common case, a batch of one: no worker group, no fail-fast
		// context (there is nothing left to stop), no size accounting
		// shared between workers.
		r := e.runOne(ctx, rq, e.callLog(resp.BatchID), req.Calls[0], req.MaxAttempts)
		if r.Success {
			e.fit(owner, &r, e.Limits.MaxTotalRespBytes)
		}
		resp.Results[0] = r
		return e.tally(resp, began)
	}
	// fail-fast cancels only the calls, so the batch can still report.
	runCtx, stop := context.WithCancel(ctx)
	defer stop()

	var g errgroup.Group
	g.SetLimit(req.MaxConcurrency)
	var sizeMu sync.Mutex
	total := 0
	for i, c := range req.Calls {
		g.Go(func() error {
			r := e.runOne(runCtx, rq, e.callLog(resp.BatchID), c, req.MaxAttempts)
			r.Index = i
			if r.Success {
				sizeMu.Lock()
				total += e.fit(owner, &r, e.Limits.MaxTotalRespBytes-total)
				sizeMu.Unlock()
			} else if req.FailFast && runCtx.Err() == nil {
				stop()
			}
			resp.Results[i] = r
			return nil
		})
	}
	_ = g.Wait()
	return e.tally(resp, began)
}

// tally counts the results and stamps the batch's time.
func (e *Executor) tally(resp Response, began time.Time) Response {
	for _, r := range resp.Results {
		if r.Success {
			resp.Succeeded++
		} else {
			resp.Failed++
		}
	}
	resp.Success = resp.Failed == 0
	resp.ElapsedMs = ms(time.Since(began))
	return resp
}

// callLog is the logger of one call of a batch. It is only made when
// something is logged (a failed attempt): binding batch_id and call_id on
// every call cost allocations on the calls that log nothing.
type callLog struct {
	base    *slog.Logger
	batchID string
	callID  string
}

func (e *Executor) callLog(batchID string) *callLog {
	return &callLog{base: e.Log, batchID: batchID, callID: "call-" + randomHex(6)}
}

func (l *callLog) Warn(msg string, args ...any) {
	if l.base == nil || !l.base.Enabled(context.Background(), slog.LevelWarn) {
		return
	}
	l.base.With("batch_id", l.batchID, "call_id", l.callID).Warn(msg, args...)
}

// retryable kinds are failures of the path to the tool, not of the tool.
func retryable(err error) bool {
	switch provider.KindOf(err) {
	case provider.KindCrashed, provider.KindCallFailed, provider.KindBusy, provider.KindUnavailable, provider.KindStopped:
		return true
	}
	return false
}

// runOne runs one entry with up to maxAttempts member calls: the budget
// its request carries is shared with a group's failover (call.Request.Take),
// and the waits between attempts are retry.Call's.
func (e *Executor) runOne(ctx context.Context, rq *call.Request, log *callLog, c Call, maxAttempts int) Result {
	began := time.Now()
	if err := ctx.Err(); err != nil {
		return e.finish(failed(ErrTypeCancelled, cancelReason(ctx)), log.callID, maxAttempts, 0, began)
	}
	budget := retry.NewBudget(maxAttempts)
	rq = rq.WithBudget(budget)
	if maxAttempts == 1 {
		// One attempt: no retry loop, no backoff to build.
		budget.Take()
		r, _ := e.attempt(ctx, rq, log, c)
		return e.finish(r, log.callID, maxAttempts, budget.Used(), began)
	}
	var r Result
	_, _ = backoff.Retry(ctx, func() (struct{}, error) {
		if !budget.Take() {
			// A group's failover spent the rest of the budget.
			return struct{}{}, backoff.Permanent(errBudgetSpent)
		}
		var err error
		if r, err = e.attempt(ctx, rq, log, c); err != nil && !retryable(err) {
			return struct{}{}, backoff.Permanent(err)
		}
		return struct{}{}, err
	}, backoff.WithBackOff(retry.Call()), backoff.WithMaxTries(uint(maxAttempts)), backoff.WithMaxElapsedTime(0))
	// When ctx ends during a wait, the last attempt's real error stands.
	return e.finish(r, log.callID, maxAttempts, budget.Used(), began)
}

// attempt is one member call of an entry; err is the call's failure (the
// result then says so), nil when the provider answered.
func (e *Executor) attempt(ctx context.Context, rq *call.Request, log *callLog, c Call) (Result, error) {
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if c.Timeout > 0 {
		cctx, cancel = context.WithTimeout(ctx, c.Timeout)
	}
	res, err := e.Invoke(cctx, rq, c.Server, c.Tool, c.Arguments)
	cancel()
	if err == nil {
		return fromResultLimit(res, e.Limits.MaxResponseBytes), nil
	}
	log.Warn("call failed", "mcp_server", c.Server, "tool", c.Tool, "attempt", rq.Budget.Used(), "error", err)
	msg := err.Error()
	if ct, ok := errors.AsType[callerText](err); ok {
		msg = ct.CallerText() // the caller's alone (a login link): not in the log above
	}
	return failed(provider.KindOf(err), msg), err
}

// callerText is an error with more for its caller than for the log
// (upstreamauth.LoginRequired's link).
type callerText interface {
	error
	CallerText() string
}

// errBudgetSpent ends the retries of an entry whose budget is spent.
var errBudgetSpent = errors.New("attempt budget spent")

func (e *Executor) finish(r Result, callID string, maxAttempts, attempts int, began time.Time) Result {
	r.CallID = callID
	if maxAttempts > 1 {
		r.RetryMetadata = &RetryMeta{Attempts: attempts, Retries: max(attempts-1, 0)}
	}
	r.ElapsedMs = ms(time.Since(began))
	return r
}

func cancelReason(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "cancelled: the batch timeout passed before the call could run"
	}
	return "cancelled: fail_fast (an earlier call failed)"
}

func failed(kind, msg string) Result {
	return Result{Success: false, Error: &msg, ErrorType: &kind}
}

// fromResult turns a provider's tool result into hangar_call's result: the
// structured content if any, else a lone text decoded as JSON when it is
// JSON (so "3" is 3), else the text, else the content list.
func fromResult(res *mcp.CallToolResult) Result { return fromResultLimit(res, 0) }

// fromResultLimit is fromResult for a batch whose per-call limit is limit
// (0: none). A lone text over the limit is kept as the provider's text: it
// is truncated into the continuation store anyway, and decoding a large
// JSON text only to encode it again costs several times its size in
// memory and CPU.
func fromResultLimit(res *mcp.CallToolResult, limit int) Result {
	if res.IsError {
		return failed(provider.KindToolError, textOf(res))
	}
	if res.StructuredContent != nil {
		return Result{Success: true, Result: res.StructuredContent}
	}
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(mcp.TextContent); ok {
			if limit > 0 && len(tc.Text) > limit {
				return Result{Success: true, Result: tc.Text}
			}
			if v, ok := decodeJSON(tc.Text); ok {
				return Result{Success: true, Result: v}
			}
			return Result{Success: true, Result: tc.Text}
		}
	}
	return Result{Success: true, Result: res.Content}
}

// decodeJSON returns text as raw JSON when it is one JSON value, so the
// answer carries it as JSON (so "3" is 3) without the gateway decoding it
// into Go values and encoding it again: numbers stay exact
// (9007199254740993 is not rounded through float64) and the cost is one
// validation. The bytes share text's memory and are never written.
func decodeJSON(text string) (any, bool) {
	b := unsafe.Slice(unsafe.StringData(text), len(text))
	if !json.Valid(b) {
		return nil, false
	}
	if t := strings.TrimLeft(text, " \t\r\n"); t != "" && t[0] == '"' {
		// A JSON string becomes the string: truncation and continuations
		// then cut its characters, not its JSON spelling.
		var s string
		if json.Unmarshal(b, &s) == nil {
			return s, true
		}
	}
	return json.RawMessage(b), true
}

func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	if len(parts) == 0 {
		return "tool reported an error with no text"
	}
	return strings.Join(parts, "\n")
}

// fit truncates r's result into the continuation cache when it is over the
// per-call limit or over what is left of the batch's total; it returns the
// bytes r now takes in the response. When the store has no room, r becomes
// a failure that says so. The continuation belongs to owner.
func (e *Executor) fit(owner Owner, r *Result, left int) int {
	text, isString := r.Result.(string)
	if !isString {
		b, err := json.Marshal(r.Result)
		if err != nil {
			return 0
		}
		text = string(b)
	}
	limit := min(e.Limits.MaxResponseBytes, max(left, truncatedPreviewBytes))
	if len(text) <= limit || e.Cache == nil {
		return len(text)
	}
	id, err := e.Cache.Put(owner, text)
	if err != nil {
		f := failed(ErrTypeContinuationFull, fmt.Sprintf("result of %d bytes is over the response limit of %d bytes and was not kept: %v", len(text), limit, err))
		r.Success, r.Result, r.Error, r.ErrorType = false, nil, f.Error, f.ErrorType
		return 0
	}
	r.Truncated = true
	r.TotalSizeBytes = len(text)
	r.ContinuationID = id
	r.Result = cutUTF8(text, limit)
	if e.Cache.OnDisk(len(text)) {
		// The inline part must not keep the whole text resident.
		r.Result = strings.Clone(r.Result.(string))
	}
	return limit
}

func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
