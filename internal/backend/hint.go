package backend

import (
	"fmt"
	"strings"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/dockerrt"
)

// A hardening rule recognises, in how a provider container failed, one of
// the defaults the gateway imposes, and names the config key that lifts it.
// Operators otherwise see "exit 1" and a foreign error message and have no
// way to know that the gateway, not the provider, took the thing away.
type hardeningRule struct {
	// applies reports whether the default is in force for s.
	applies func(s *config.Server) bool
	// signs are lower-case fragments of stderr (or of the exit text) that
	// point at this default.
	signs []string
	// exitSign, when set, matches the exit description instead of stderr.
	exitSign string
	hint     func(s *config.Server) string
}

var hardeningRules = []hardeningRule{
	{
		exitSign: "oom",
		signs:    []string{"out of memory", "cannot allocate memory", "memoryerror", "heap out of memory", "std::bad_alloc"},
		applies:  func(*config.Server) bool { return true },
		hint: func(s *config.Server) string {
			return fmt.Sprintf("the container ran out of memory at its limit of %s; raise %s",
				mib(pick(s.Resources.MemoryBytes, dockerrt.DefaultMemoryBytes)), keyOf(s, "resources.memory"))
		},
	},
	{
		signs:   []string{"read-only file system", "erofs"},
		applies: func(s *config.Server) bool { return s.ReadOnly },
		hint: func(s *config.Server) string {
			return fmt.Sprintf("the root filesystem is read-only (a hardening default; /tmp is writable); "+
				"if the provider must write elsewhere, mount a volume there or set %s: false", keyOf(s, "read_only"))
		},
	},
	{
		signs:   []string{"permission denied", "eacces", "operation not permitted", "eperm"},
		applies: func(s *config.Server) bool { return !isRoot(effectiveUser(s)) },
		hint: func(s *config.Server) string {
			return fmt.Sprintf("the provider runs as the unprivileged user %s (a hardening default); "+
				"set %s to the uid:gid the image expects", effectiveUser(s), keyOf(s, "user"))
		},
	},
	{
		signs: []string{"temporary failure in name resolution", "name or service not known", "no such host",
			"getaddrinfo", "eai_again", "enotfound", "could not resolve host", "nodename nor servname",
			"network is unreachable", "enetunreach", "failed to resolve", "name resolution"},
		applies: hasNoNetwork,
		hint: func(s *config.Server) string {
			return fmt.Sprintf("the container has no network (a hardening default for stdio providers); "+
				"if the provider needs one, set %s: bridge (or a network name)", keyOf(s, "network"))
		},
	},
	{
		signs: []string{"hangar egress to", "egress allow-list", "providers may not reach", "proxyconnect",
			"temporary failure in name resolution", "name or service not known", "no such host", "network is unreachable"},
		applies: func(s *config.Server) bool { return s.Egress != nil },
		hint: func(s *config.Server) string {
			return fmt.Sprintf("the container reaches out only through its egress proxy, which allows %s; "+
				"add the host the provider needs there (its HTTP client must honour HTTPS_PROXY)", keyOf(s, "egress.allow"))
		},
	},
	{
		signs: []string{"can't start new thread", "pthread_create", "fork: retry", "cannot fork", "fork failed",
			"resource temporarily unavailable", "eagain"},
		applies: func(*config.Server) bool { return true },
		hint: func(s *config.Server) string {
			return fmt.Sprintf("the container may have hit its process limit of %d; raise %s",
				pick(s.Resources.PidsLimit, dockerrt.DefaultPidsLimit), keyOf(s, "resources.pids"))
		},
	},
}

// hardeningHint explains a failed start of s from the container's exit
// description and stderr, as "; hint: ..." naming the config key to change,
// or "" when nothing points at a hardening default. It is the one place
// start errors get such hints.
func hardeningHint(s *config.Server, exit, stderr string) string {
	if s == nil {
		return ""
	}
	exit, stderr = strings.ToLower(exit), strings.ToLower(stderr)
	var hints []string
	for _, r := range hardeningRules {
		if !r.applies(s) {
			continue
		}
		hit := r.exitSign != "" && strings.Contains(exit, r.exitSign)
		for _, sign := range r.signs {
			hit = hit || strings.Contains(stderr, sign)
		}
		if hit {
			hints = append(hints, r.hint(s))
		}
	}
	if len(hints) == 0 {
		return ""
	}
	return "; hint: " + strings.Join(hints, "; also: ")
}

// keyOf names key of s as the operator wrote it: the full path for a server
// of the config file, else the key and the server it belongs to.
func keyOf(s *config.Server, key string) string {
	if s.Origin == "" && s.Weight == 0 { // a top-level config server (members carry a weight)
		return "mcp_servers." + s.ID + "." + key
	}
	return key + " (server " + s.ID + ")"
}

// hasNoNetwork mirrors SpecFor: a container gets no network when none is
// configured and it speaks stdio (an HTTP provider is put on a network the
// gateway reaches).
func hasNoNetwork(s *config.Server) bool {
	stdio := s.Transport == "" || s.Transport == config.TransportStdio
	// A server with egress has a network: its proxy's (see the egress hint).
	return s.Egress == nil && (s.Network == "none" || (s.Network == "" && stdio))
}

func effectiveUser(s *config.Server) string {
	if s.User == "" {
		return dockerrt.DefaultUser
	}
	return s.User
}

func isRoot(user string) bool {
	name, _, _ := strings.Cut(user, ":")
	return name == "0" || name == "root"
}

func pick(v, def int64) int64 {
	if v > 0 {
		return v
	}
	return def
}

func mib(b int64) string {
	if b%(1<<30) == 0 {
		return fmt.Sprintf("%dg", b>>30)
	}
	return fmt.Sprintf("%dm", b>>20)
}
