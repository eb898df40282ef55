package batch

import (
	"context"

	"github.com/mcp-hangar/hangar/internal/auth"
)

// Owner is the identity a continuation belongs to. Only the identity that
// caused a result to be truncated may read or delete its continuation: a
// continuation ID is a capability that can leak (logs, a shared agent
// transcript), and the data behind it may be another caller's.
type Owner struct {
	Kind string
	Name string
}

// OwnerOf is the owner for the caller ctx carries. A context without an
// identity is an in-process caller, treated as the local identity exactly as
// the gateway's tool handlers treat it.
func OwnerOf(ctx context.Context) Owner {
	id, ok := auth.FromContext(ctx)
	if !ok {
		id = auth.Local(auth.KindLocal)
	}
	return Owner{Kind: id.Kind, Name: id.Name}
}
