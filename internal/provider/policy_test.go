package provider_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/provider"
)

// TestFnmatch checks one allow pattern against names, with the semantics of
// Python's fnmatch.fnmatchcase.
func TestFnmatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		name    string
		want    bool
	}{
		{"*", "", true},
		{"*", "anything", true},
		{"*", "a/b/c", true}, // unlike path.Match, * crosses "/"
		{"read_*", "read_file", true},
		{"read_*", "read_", true},
		{"read_*", "write_file", false},
		{"read_*", "xread_file", false}, // anchored at the start
		{"*_file", "read_file", true},
		{"*_file", "read_file_x", false}, // anchored at the end
		{"a/*", "a/b/c", true},
		{"*/*", "ab", false},
		{"?", "a", true},
		{"?", "", false},
		{"?", "ab", false},
		{"?", "/", true},
		{"file?", "file1", true},
		{"file?", "file", false},
		{"[abc]x", "bx", true},
		{"[abc]x", "dx", false},
		{"[!abc]x", "dx", true},
		{"[!abc]x", "ax", false},
		{"[a-c]", "b", true},
		{"[a-c]", "d", false},
		{"[!a-c]", "d", true},
		{"[a-]", "-", true},
		{"[]]", "]", true},       // ] first in a set is literal
		{"[]a]", "a", true},      //
		{"[!]]", "]", false},     // complemented
		{"[!]]", "a", true},      //
		{"[^]", "^", true},       // ^ is not negation in fnmatch
		{"[^a]", "b", false},     // it is a member
		{"[^a]", "^", true},      //
		{"[", "[", true},         // unclosed set: literal
		{"[abc", "[abc", true},   //
		{"[!]", "[!]", true},     // no closing ] after the leading ]
		{"a[", "a[", true},       //
		{"[[]", "[", true},       // [ inside a set
		{"[a\\]", "\\", true},    // backslash in a set is literal
		{"[a\\]", "a", true},     //
		{"a\\b", "a\\b", true},   // backslash is not an escape
		{"a\\*", "a\\xyz", true}, //
		{"file.txt", "file.txt", true},
		{"file.txt", "fileXtxt", false}, // . is literal
		{"a+b", "a+b", true},
		{"a+b", "aab", false},
		{"(x)|y", "(x)|y", true},
		{"(x)|y", "y", false},
		{"^a$", "^a$", true},
		{"{a,b}", "a", false}, // no brace expansion
		{"{a,b}", "{a,b}", true},
		{"Read*", "read_file", false}, // case-sensitive
		{"tool.*", "tool.", true},
		{"**", "x/y", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false},
		{"?", "é", true}, // one character, not one byte
		{"[é]", "é", true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s~%s", tt.pattern, tt.name), func(t *testing.T) {
			t.Parallel()
			p := provider.NewToolPolicy([]string{tt.pattern}, nil)
			if got := p.Allowed(tt.name); got != tt.want {
				t.Errorf("allow %q: Allowed(%q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
			}
			// The same pattern as a deny list denies exactly what it matches.
			d := provider.NewToolPolicy(nil, []string{tt.pattern})
			if got := d.Allowed(tt.name); got == tt.want {
				t.Errorf("deny %q: Allowed(%q) = %v, want %v", tt.pattern, tt.name, got, !tt.want)
			}
		})
	}
}

// TestFnmatchNonASCIILiteral: fnmatch.compile walks the pattern byte by
// byte and writes a literal byte c as regexp.QuoteMeta(string(c)); for a
// byte ≥ 0x80 string(c) is the UTF-8 encoding of the rune U+00xx, not the
// byte, so "é" (C3 A9) becomes "Ã©" and a pattern with any non-ASCII
// literal never matches.
func TestFnmatchNonASCIILiteral(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		name    string
		want    bool
	}{
		{"é*", "été", true},
		{"café", "café", true},
		{"数据_*", "数据_read", true},
		{"*_ü", "x_ü", true},
	}
	for _, tt := range tests {
		p := provider.NewToolPolicy([]string{tt.pattern}, nil)
		if got := p.Allowed(tt.name); got != tt.want {
			t.Errorf("allow %q: Allowed(%q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

// TestFnmatchMalformedSets: patterns come from the config file, and a set
// that Python's fnmatch accepts must not make the gateway panic when the
// provider is created. fnmatch.compile passes these sets to
// regexp.MustCompile, which panics: "[z-a]" is an invalid range for RE2
// (Python drops empty ranges, so the set matches nothing) and "[[:alpha:]]"
// reaches RE2 as a POSIX class with no closing bracket (Python escapes the
// leading "[" of a set, so the set is the characters "[:alph" and the
// pattern is that set followed by "]").
func TestFnmatchMalformedSets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		name    string
		want    bool
	}{
		{"[z-a]", "m", false},
		{"[z-a]", "z", false},
		{"x[z-a]", "x", false},
		{"[[:alpha:]]", "a]", true},
		{"[[:alpha:]]", ":]", true},
		{"[[:alpha:]]", "a", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s~%s", tt.pattern, tt.name), func(t *testing.T) {
			t.Parallel()
			var got bool
			panicked := func() (v any) {
				defer func() { v = recover() }()
				got = provider.NewToolPolicy([]string{tt.pattern}, nil).Allowed(tt.name)
				return nil
			}()
			if panicked != nil {
				t.Fatalf("NewToolPolicy(%q) panicked: %v", tt.pattern, panicked)
			}
			if got != tt.want {
				t.Errorf("Allowed(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

func TestToolPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		allow, deny []string
		typ         string
		allowed     []string
		denied      []string
	}{
		{"open", nil, nil, "open", []string{"a", "b/c", ""}, nil},
		{"allow list", []string{"read_*", "list"}, nil, "allow_list", []string{"read_x", "list"}, []string{"write", "listing"}},
		{"deny list", nil, []string{"rm*", "exec"}, "deny_list", []string{"ls", "execute"}, []string{"rm", "rm_rf", "exec"}},
		{"deny wins", []string{"*"}, []string{"secret_*"}, "allow_and_deny", []string{"public"}, []string{"secret_x"}},
		{"deny wins over exact allow", []string{"danger"}, []string{"danger"}, "allow_and_deny", nil, []string{"danger", "other"}},
		{"empty allow list means no allow list", []string{}, nil, "open", []string{"x"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := provider.PolicyFor(config.Tools{AllowList: tt.allow, DenyList: tt.deny})
			if got := p.Type(); got != tt.typ {
				t.Errorf("Type() = %q, want %q", got, tt.typ)
			}
			if p.HasAllowList() != (len(tt.allow) > 0) || p.HasDenyList() != (len(tt.deny) > 0) {
				t.Errorf("HasAllowList %v HasDenyList %v", p.HasAllowList(), p.HasDenyList())
			}
			for _, n := range tt.allowed {
				if !p.Allowed(n) {
					t.Errorf("Allowed(%q) = false", n)
				}
			}
			for _, n := range tt.denied {
				if p.Allowed(n) {
					t.Errorf("Allowed(%q) = true", n)
				}
			}
		})
	}
}

func TestCanTransition(t *testing.T) {
	t.Parallel()
	all := []provider.State{provider.Cold, provider.Initializing, provider.Ready, provider.Degraded, provider.Dead}
	legal := map[[2]provider.State]bool{
		{provider.Cold, provider.Initializing}:  true,
		{provider.Initializing, provider.Ready}: true,
		{provider.Initializing, provider.Dead}:  true,
		{provider.Initializing, provider.Cold}:  true,
		{provider.Ready, provider.Degraded}:     true,
		{provider.Ready, provider.Dead}:         true,
		{provider.Ready, provider.Cold}:         true,
		{provider.Degraded, provider.Ready}:     true,
		{provider.Degraded, provider.Cold}:      true,
		{provider.Degraded, provider.Dead}:      true,
		{provider.Dead, provider.Initializing}:  true,
		{provider.Dead, provider.Cold}:          true,
	}
	for _, from := range all {
		for _, to := range all {
			want := legal[[2]provider.State{from, to}]
			if got := provider.CanTransition(from, to); got != want {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, got, want)
			}
		}
	}
	if provider.CanTransition("", provider.Cold) || provider.CanTransition(provider.Cold, "bogus") {
		t.Error("unknown states are allowed")
	}
}

func TestIndicator(t *testing.T) {
	t.Parallel()
	tests := []struct {
		state provider.State
		want  string
	}{
		{provider.Cold, "[COLD]"},
		{provider.Initializing, "[STARTING]"},
		{provider.Ready, "[READY]"},
		{provider.Degraded, "[DEGRADED]"},
		{provider.Dead, "[DEAD]"},
	}
	for _, tt := range tests {
		if got := tt.state.Indicator(); got != tt.want {
			t.Errorf("%s.Indicator() = %q, want %q", tt.state, got, tt.want)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	t.Parallel()
	cause := errors.New("root cause")
	tests := []struct {
		name string
		err  error
		want string
		kind string
	}{
		{"no detail", &provider.Error{Kind: provider.KindUnknownServer, ID: "x"}, "unknown_mcp_server: x", provider.KindUnknownServer},
		{"detail", &provider.Error{Kind: provider.KindStartFailed, ID: "x", Detail: "image missing"}, "start_failed: x (image missing)", provider.KindStartFailed},
		{"Errorf", provider.Errorf(provider.KindBusy, "x", "max %d", 3), "provider_busy: x (max 3)", provider.KindBusy},
		{"tool id", provider.Errorf(provider.KindToolNotAllowed, "x.t", "blocked"), "tool_not_allowed: x.t (blocked)", provider.KindToolNotAllowed},
		{"wrapped", fmt.Errorf("ctx: %w", &provider.Error{Kind: provider.KindCrashed, ID: "x", Detail: "exit 1", Err: cause}), "ctx: provider_crashed: x (exit 1)", provider.KindCrashed},
		{"plain error", cause, "root cause", provider.KindCallFailed},
		{"nil", nil, "", provider.KindCallFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.err != nil {
				if got := tt.err.Error(); got != tt.want {
					t.Errorf("Error() = %q, want %q", got, tt.want)
				}
			}
			if got := provider.KindOf(tt.err); got != tt.kind {
				t.Errorf("KindOf = %q, want %q", got, tt.kind)
			}
		})
	}
	e := &provider.Error{Kind: provider.KindCrashed, ID: "x", Err: cause}
	if !errors.Is(e, cause) {
		t.Error("Error does not unwrap to its cause")
	}
}

func TestLimiter(t *testing.T) {
	t.Parallel()
	l := provider.NewLimiter(2)
	if l.Cap() != 2 || l.InUse() != 0 {
		t.Fatalf("Cap %d InUse %d", l.Cap(), l.InUse())
	}
	// A free slot is taken even with a context that has already ended.
	done, cancel := context.WithCancel(t.Context())
	cancel()
	if err := l.Acquire(done); err != nil {
		t.Fatalf("Acquire with a free slot and a done ctx: %v", err)
	}
	if err := l.Acquire(t.Context()); err != nil {
		t.Fatalf("second Acquire: %v", err)
	}
	if l.InUse() != 2 {
		t.Errorf("InUse = %d, want 2", l.InUse())
	}
	ctx, cancel2 := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel2()
	if err := l.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Acquire on a full limiter = %v, want DeadlineExceeded", err)
	}
	got := make(chan error, 1)
	go func() { got <- l.Acquire(t.Context()) }()
	time.Sleep(10 * time.Millisecond)
	l.Release()
	if err := <-got; err != nil {
		t.Errorf("Acquire after Release: %v", err)
	}
	l.Release()
	l.Release()
	if l.InUse() != 0 {
		t.Errorf("InUse = %d, want 0", l.InUse())
	}
}
