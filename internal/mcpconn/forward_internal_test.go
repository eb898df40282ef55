package mcpconn

import (
	"context"
	"errors"
	"maps"
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

// TestEndToEndMeta: the caller's protocol _meta keys stay behind; the rest
// goes on.
func TestEndToEndMeta(t *testing.T) {
	t.Parallel()
	in := map[string]any{
		mcp.MetaKeyProtocolVersion: "2026-07-28",
		mcp.MetaKeyClientInfo:      map[string]any{"name": "x"},
		"trace":                    "abc",
		"vendor.example/id":        1,
	}
	want := map[string]any{"trace": "abc", "vendor.example/id": 1}
	if got := endToEnd(in); !maps.Equal(got, want) {
		t.Errorf("endToEnd = %v, want %v", got, want)
	}
	if got := endToEnd(map[string]any{mcp.MetaKeyProtocolVersion: "x"}); got != nil {
		t.Errorf("only protocol keys: %v, want nil", got)
	}
}
