package batch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/call"
)

// me is the owner the single-owner cache tests use.
var me = Owner{Kind: auth.KindToken, Name: "me"}

// localOwner is whom a context without an identity stands for.
var localOwner = Owner{Kind: auth.KindLocal, Name: auth.KindLocal}

func TestOwnerOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		id   auth.Identity
		want Owner
	}{
		{"no identity is the local caller", (*call.Request)(nil).CallerOr(), localOwner},
		{"token", auth.NewIdentity("agent", auth.KindToken, nil, nil), Owner{auth.KindToken, "agent"}},
		{"jwt subject", auth.NewIdentity("agent", auth.KindJWT, nil, nil), Owner{auth.KindJWT, "agent"}},
		{"anonymous", auth.NewIdentity(auth.KindAnonymous, auth.KindAnonymous, nil, nil), Owner{auth.KindAnonymous, auth.KindAnonymous}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := OwnerOf(tt.id); got != tt.want {
				t.Errorf("OwnerOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A continuation is invisible to every identity but the one that created it:
// Get and Delete answer exactly as for an unknown ID, and a refused Delete
// leaves the entry in place for its owner.
func TestCacheBindsContinuationToOwner(t *testing.T) {
	t.Parallel()
	c, _ := newTestCache(time.Minute, 1<<10)
	id := put(t, c, "secret result")

	others := []Owner{
		{Kind: auth.KindToken, Name: "other"},
		{Kind: auth.KindJWT, Name: "me"}, // same name, other kind: a JWT subject is not a token name
		{Kind: auth.KindAnonymous, Name: auth.KindAnonymous},
		localOwner,
		{},
	}
	for _, o := range others {
		gotData, gotOK := c.Get(o, id)
		wantData, wantOK := c.Get(o, "cont_000000000000000000000000")
		if gotData != wantData || gotOK != wantOK || gotOK {
			t.Errorf("Get by %+v = %q %v, want the unknown-id answer %q %v", o, gotData, gotOK, wantData, wantOK)
		}
		if piece, _, _, ok := c.Read(o, id, 0, 100); ok || piece != "" {
			t.Errorf("Read by %+v = %q %v, want the unknown-id answer", o, piece, ok)
		}
		if c.Delete(o, id) != c.Delete(o, "cont_000000000000000000000000") {
			t.Errorf("Delete by %+v differs from the unknown-id answer", o)
		}
	}
	if data, ok := c.Get(me, id); !ok || data != "secret result" {
		t.Fatalf("owner's Get after others tried = %q %v, want the data", data, ok)
	}
	if !c.Delete(me, id) {
		t.Error("owner's Delete = false")
	}
}

// The executor files a truncated result under the identity of the batch's
// caller.
func TestTruncatedResultBelongsToCaller(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("b", 300)
	f := &fakeInvoker{handle: func(context.Context, *call.Request, string, string, map[string]any) (*mcp.CallToolResult, error) {
		return text(big), nil
	}}
	lim := DefaultLimits()
	lim.MaxResponseBytes = 100
	cache := NewCache(time.Minute, 1<<20)
	rq := &call.Request{Caller: auth.NewIdentity("alice", auth.KindToken, []string{auth.ScopeCall}, nil)}
	r := newExecutor(f, lim, cache).Run(t.Context(), rq, request(1, 1, 10*time.Second)).Results[0]
	if !r.Truncated || r.ContinuationID == "" {
		t.Fatalf("result not truncated: %+v", r)
	}
	if data, ok := cache.Get(Owner{auth.KindToken, "alice"}, r.ContinuationID); !ok || data != big {
		t.Errorf("alice cannot read her continuation: %v", ok)
	}
	if _, ok := cache.Get(Owner{auth.KindToken, "bob"}, r.ContinuationID); ok {
		t.Error("bob can read alice's continuation")
	}
}
