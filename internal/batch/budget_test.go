package batch

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// However a group fails over inside an invocation, one entry makes at most
// max_attempts member calls.
func TestMaxAttemptsBoundsMemberCalls(t *testing.T) {
	t.Parallel()
	// The waits between attempts pass on the bubble's fake clock.
	synctest.Test(t, func(t *testing.T) { maxAttemptsBound(t) })
}

func maxAttemptsBound(t *testing.T) {
	for _, maxAttempts := range []int{1, 2, 3, 5} {
		var memberCalls atomic.Int64
		crash := &provider.Error{Kind: provider.KindCrashed, ID: "g", Detail: "exit 1"}
		// A group that fails over once per invocation when allowed.
		f := &fakeInvoker{handle: func(_ context.Context, rq *call.Request, _, _ string, _ map[string]any) (*mcp.CallToolResult, error) {
			memberCalls.Add(1)
			if rq.Take() {
				memberCalls.Add(1)
			}
			return nil, crash
		}}
		req := request(1, 1, time.Minute)
		req.MaxAttempts = maxAttempts
		r := newExecutor(f, DefaultLimits(), nil).Run(t.Context(), nil, req).Results[0]
		if got := int(memberCalls.Load()); got != maxAttempts {
			t.Errorf("max_attempts %d: %d member calls, want exactly %d", maxAttempts, got, maxAttempts)
		}
		if r.Success || r.ErrorType == nil || *r.ErrorType != provider.KindCrashed {
			t.Errorf("max_attempts %d: result %+v, want the crash", maxAttempts, r)
		}
		if maxAttempts > 1 && (r.RetryMetadata == nil || r.RetryMetadata.Attempts != maxAttempts) {
			t.Errorf("max_attempts %d: retry_metadata %+v, want %d attempts", maxAttempts, r.RetryMetadata, maxAttempts)
		}
	}
}
