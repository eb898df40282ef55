package mcpconn

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

type stubRelay struct{ Relay }

func (stubRelay) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{Model: "stub"}, nil
}

// TestRelayAttribution: a provider's request is answered only when exactly
// one call is in flight and it came from a client that can answer.
func TestRelayAttribution(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		inFlight []Relay
		wantErr  error
	}{
		{"no call", nil, ErrNoRelay},
		{"one relaying call", []Relay{stubRelay{}}, nil},
		{"one call without a relay", []Relay{nil}, ErrNotRelayed},
		{"two calls", []Relay{stubRelay{}, nil}, ErrAmbiguousRelay},
		{"two relaying calls", []Relay{stubRelay{}, stubRelay{}}, ErrAmbiguousRelay},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := &relayHub{}
			for _, r := range tt.inFlight {
				defer h.add(r)()
			}
			res, err := h.CreateMessage(t.Context(), mcp.CreateMessageRequest{})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil && res.Model != "stub" {
				t.Errorf("answered by %q", res.Model)
			}
		})
	}
}

// TestEndToEndMeta: the caller's protocol _meta keys and its baggage stay
// behind; the rest goes on.
func TestEndToEndMeta(t *testing.T) {
	t.Parallel()
	in := map[string]any{
		mcp.MetaKeyProtocolVersion: "2026-07-28",
		mcp.MetaKeyClientInfo:      map[string]any{"name": "x"},
		"trace":                    "abc",
		"vendor.example/id":        1,
		"baggage":                  "user.email=a@example.com,tenant=t1",
	}
	want := map[string]any{"trace": "abc", "vendor.example/id": 1}
	if got := endToEnd(in); !maps.Equal(got, want) {
		t.Errorf("endToEnd = %v, want %v", got, want)
	}
	if got := endToEnd(map[string]any{mcp.MetaKeyProtocolVersion: "x"}); got != nil {
		t.Errorf("only protocol keys: %v, want nil", got)
	}
}

// TestProgressOnlyGoesUp: a call's progress reaches the caller under its
// own token and increasing, whatever order the provider's streams deliver
// it in; one that went backwards is dropped, and progress without a number
// passes.
func TestProgressOnlyGoesUp(t *testing.T) {
	t.Parallel()
	var r progressRouter
	var got []any
	tok, done := r.register("caller", func(p map[string]any) {
		if p["progressToken"] != "caller" {
			t.Errorf("token %v", p["progressToken"])
		}
		got = append(got, p["progress"])
	})
	defer done()
	note := func(progress any) mcp.JSONRPCNotification {
		n := mcp.JSONRPCNotification{}
		n.Method = string(mcp.MethodNotificationProgress)
		n.Params.AdditionalFields = map[string]any{"progressToken": tok, "progress": progress}
		return n
	}
	for _, p := range []any{1.0, 3.0, 2.0, 3.0, "x", 4.0} {
		r.dispatch(note(p))
	}
	if want := []any{1.0, 3.0, "x", 4.0}; !slices.Equal(got, want) {
		t.Errorf("sent %v, want %v", got, want)
	}
}
