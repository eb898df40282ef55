package batch

import (
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

// OwnerOf is the owner for the caller id (auth.Caller of a request: an
// in-process caller is the local identity).
func OwnerOf(id auth.Identity) Owner {
	return Owner{Kind: id.Kind, Name: id.Name}
}
