package provider

import (
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/fnmatch"
)

// ToolPolicy filters tools by fnmatch allow and deny lists: a tool passes if
// it matches an allow pattern (or there is no allow list) and no deny
// pattern. Deny wins.
type ToolPolicy struct {
	allow, deny fnmatch.Patterns
}

// NewToolPolicy compiles the patterns once.
func NewToolPolicy(allow, deny []string) *ToolPolicy {
	return &ToolPolicy{allow: fnmatch.Compile(allow), deny: fnmatch.Compile(deny)}
}

// PolicyFor returns the policy of a server's config.
func PolicyFor(t config.Tools) *ToolPolicy { return NewToolPolicy(t.AllowList, t.DenyList) }

// Allowed reports whether the tool may be listed and called.
func (p *ToolPolicy) Allowed(name string) bool {
	if p.deny.Match(name) {
		return false
	}
	return p.allow.Len() == 0 || p.allow.Match(name)
}

// Type names the policy for hangar_details.
func (p *ToolPolicy) Type() string {
	switch {
	case p.allow.Len() > 0 && p.deny.Len() > 0:
		return "allow_and_deny"
	case p.allow.Len() > 0:
		return "allow_list"
	case p.deny.Len() > 0:
		return "deny_list"
	}
	return "open"
}

// HasAllowList and HasDenyList are for hangar_details.
func (p *ToolPolicy) HasAllowList() bool { return p.allow.Len() > 0 }
func (p *ToolPolicy) HasDenyList() bool  { return p.deny.Len() > 0 }
