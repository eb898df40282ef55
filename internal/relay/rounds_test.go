package relay

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/auth"
)

// modernCall is the context of a 2026-07-28 tools/call by owner that
// declared sampling.
func modernCall(ctx context.Context, owner string) context.Context {
	caps := mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}
	ctx = server.WithRequestProtocolInfo(ctx, &server.RequestProtocolInfo{Modern: true, ProtocolVersion: "2026-07-28", ClientCapabilities: &caps})
	return auth.WithIdentity(ctx, auth.NewIdentity(owner, auth.KindToken, auth.AllScopes, nil))
}

// asker stands for a tool whose provider asks for sampling n times and
// answers with the models that answered; a refusal is its error result.
func asker(n int) server.ToolHandlerFunc {
	return func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var models []string
		for range n {
			relay := RelayOf(ctx)
			if relay == nil {
				return mcp.NewToolResultError("no relay"), nil
			}
			res, err := relay.CreateMessage(ctx, mcp.CreateMessageRequest{})
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			models = append(models, res.Model)
		}
		return mcp.NewToolResultText(strings.Join(models, ",")), nil
	}
}

func toolCall(tool, state string, answers mcp.InputResponses) mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.RequestState = state
	req.Params.InputResponses = answers
	return req
}

// answer answers every sampling request of res with model "m<id>".
func answer(t *testing.T, res *mcp.CallToolResult) mcp.InputResponses {
	t.Helper()
	if !res.NeedsInput() || len(res.InputRequests) == 0 || res.RequestState == "" {
		t.Fatalf("want input_required with requests and a state, got %+v", res)
	}
	out := mcp.InputResponses{}
	for id, req := range res.InputRequests {
		if req.Method != mcp.MethodSamplingCreateMessage {
			t.Fatalf("request %s is %s", id, req.Method)
		}
		out[id] = mcp.NewSamplingInputResponse(mcp.CreateMessageResult{Model: "m" + id})
	}
	return out
}

func resultText(t *testing.T, res *mcp.CallToolResult) (string, bool) {
	t.Helper()
	if res == nil || len(res.Content) != 1 {
		t.Fatalf("want one content item, got %+v", res)
	}
	return res.Content[0].(mcp.TextContent).Text, res.IsError
}

// TestInputRoundsResume: each provider request is one round trip; the
// requestState resumes the call only for its owner and its tool, and is
// forgotten with the call.
func TestInputRoundsResume(t *testing.T) {
	t.Parallel()
	r := NewInputRounds(time.Minute, 10)
	h := r.Middleware(func(string) bool { return true })(asker(2))
	alice, bob := modernCall(t.Context(), "alice"), modernCall(t.Context(), "bob")

	first, err := h(alice, toolCall("p__ask", "", nil))
	if err != nil {
		t.Fatal(err)
	}
	answers := answer(t, first)
	state := first.RequestState
	if n := r.waiting(); n != 1 {
		t.Errorf("%d calls waiting, want 1", n)
	}
	for name, tc := range map[string]struct {
		ctx  context.Context
		tool string
	}{"another identity": {bob, "p__ask"}, "another tool": {alice, "p__other"}} {
		res, err := h(tc.ctx, toolCall(tc.tool, state, answers))
		if text, isErr := resultText(t, res); err != nil || !isErr || !strings.Contains(text, "unknown or expired requestState") {
			t.Errorf("%s resumed: %q, %v", name, text, err)
		}
	}
	second, err := h(alice, toolCall("p__ask", state, answers))
	if err != nil {
		t.Fatal(err)
	}
	if second.RequestState != state {
		t.Errorf("the second round has state %q, want %q", second.RequestState, state)
	}
	last, err := h(alice, toolCall("p__ask", state, answer(t, second)))
	if err != nil {
		t.Fatal(err)
	}
	if text, isErr := resultText(t, last); isErr || text != "m1,m2" {
		t.Errorf("result %q (error %v), want m1,m2", text, isErr)
	}
	if n := r.waiting(); n != 0 {
		t.Errorf("%d calls waiting after the result", n)
	}
	res, _ := h(alice, toolCall("p__ask", state, answers))
	if text, isErr := resultText(t, res); !isErr || !strings.Contains(text, "unknown or expired") {
		t.Errorf("a finished call resumed: %q", text)
	}
}

// TestInputRoundsMissingAnswer: a question the client did not answer is
// asked again.
func TestInputRoundsMissingAnswer(t *testing.T) {
	t.Parallel()
	r := NewInputRounds(time.Minute, 10)
	h := r.Middleware(func(string) bool { return true })(asker(1))
	alice := modernCall(t.Context(), "alice")
	first, _ := h(alice, toolCall("p__ask", "", nil))
	again, err := h(alice, toolCall("p__ask", first.RequestState, nil))
	if err != nil || !again.NeedsInput() || len(again.InputRequests) != 1 {
		t.Fatalf("unanswered: %+v, %v", again, err)
	}
	last, _ := h(alice, toolCall("p__ask", first.RequestState, answer(t, again)))
	if text, isErr := resultText(t, last); isErr || text != "m1" {
		t.Errorf("result %q", text)
	}
}

// TestInputRoundsExpire: a client that does not come back within the TTL
// leaves a call that is cancelled (the provider gets a clear error) and
// forgotten; synctest fails the test if its goroutine outlives it.
func TestInputRoundsExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewInputRounds(time.Minute, 10)
		provider := make(chan string, 1)
		h := r.Middleware(func(string) bool { return true })(func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_, err := RelayOf(ctx).CreateMessage(ctx, mcp.CreateMessageRequest{})
			provider <- err.Error()
			return nil, err
		})
		alice := modernCall(t.Context(), "alice")
		first, _ := h(alice, toolCall("p__ask", "", nil))
		answer(t, first)
		time.Sleep(time.Minute - time.Second)
		synctest.Wait()
		if n := r.waiting(); n != 1 {
			t.Fatalf("%d calls waiting before the TTL", n)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := <-provider; !strings.Contains(got, "did not call again with the requestState in time") {
			t.Errorf("provider got %q", got)
		}
		if n := r.waiting(); n != 0 {
			t.Errorf("%d calls waiting after the TTL", n)
		}
		res, _ := h(alice, toolCall("p__ask", first.RequestState, nil))
		if text, isErr := resultText(t, res); !isErr || !strings.Contains(text, "unknown or expired") {
			t.Errorf("an expired call resumed: %q", text)
		}
	})
}

// TestInputRoundsCap: past the most calls that may wait, a provider's
// request is refused at once and its call goes on without it.
func TestInputRoundsCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewInputRounds(time.Minute, 1)
		h := r.Middleware(func(string) bool { return true })(asker(1))
		alice := modernCall(t.Context(), "alice")
		first, _ := h(alice, toolCall("p__ask", "", nil))
		answer(t, first)
		res, err := h(alice, toolCall("p__ask", "", nil))
		if text, isErr := resultText(t, res); err != nil || !isErr || !strings.Contains(text, "1 calls already wait for their clients' input") {
			t.Errorf("over the cap: %q, %v", text, err)
		}
		// The first call ends with its TTL.
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if n := r.waiting(); n != 0 {
			t.Errorf("%d calls waiting", n)
		}
	})
}

// TestInputRoundsClientGone: a client that goes away while the call runs
// (before any question) cancels it.
func TestInputRoundsClientGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewInputRounds(time.Minute, 10)
		cancelled := make(chan struct{})
		h := r.Middleware(func(string) bool { return true })(func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		})
		ctx, cancel := context.WithTimeout(modernCall(t.Context(), "alice"), time.Second)
		defer cancel()
		if _, err := h(ctx, toolCall("p__ask", "", nil)); err == nil {
			t.Error("the call of a client gone returned no error")
		}
		synctest.Wait()
		select {
		case <-cancelled:
		default:
			t.Error("the provider call was not cancelled")
		}
	})
}

// A client that declared nothing is served in line, without a multi
// round trip relay: the front door's own relay refuses it at once (also
// without a server in the context, as on the direct call path, calls.go),
// and nothing waits.
func TestInputRoundsNotUsed(t *testing.T) {
	t.Parallel()
	r := NewInputRounds(time.Minute, 10)
	h := r.Middleware(func(string) bool { return true })(asker(1))
	bare := server.WithRequestProtocolInfo(t.Context(), &server.RequestProtocolInfo{Modern: true, ProtocolVersion: "2026-07-28", ClientCapabilities: &mcp.ClientCapabilities{}})
	res, _ := h(bare, toolCall("p__ask", "", nil))
	if text, isErr := resultText(t, res); !isErr || text != "hangar: the calling client did not declare the sampling capability" {
		t.Errorf("no capabilities: %q", text)
	}
	if n := r.waiting(); n != 0 {
		t.Errorf("%d calls waiting", n)
	}
}

// TestInputRoundsDoneWhileWaiting: a call that ended while its client was
// away (its provider gave up asking) answers the next round with its
// result, not with the moot question again.
func TestInputRoundsDoneWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewInputRounds(time.Minute, 10)
		h := r.Middleware(func(string) bool { return true })(func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			asking, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			if _, err := RelayOf(ctx).CreateMessage(asking, mcp.CreateMessageRequest{}); err != nil {
				return mcp.NewToolResultText("gave up: " + err.Error()), nil
			}
			return mcp.NewToolResultText("answered"), nil
		})
		alice := modernCall(t.Context(), "alice")
		first, _ := h(alice, toolCall("p__ask", "", nil))
		answer(t, first)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		res, err := h(alice, toolCall("p__ask", first.RequestState, nil))
		if text, _ := resultText(t, res); err != nil || text != "gave up: context deadline exceeded" {
			t.Errorf("after the provider gave up: %q, %v", text, err)
		}
		if n := r.waiting(); n != 0 {
			t.Errorf("%d calls waiting", n)
		}
	})
}
