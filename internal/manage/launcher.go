package manage

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/call"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
	"github.com/mcp-hangar/hangar/internal/provider"
	"github.com/mcp-hangar/hangar/internal/store"
)

// SecretLauncher resolves the keystore placeholders of installed servers
// at launch, so that specs everywhere else (the provider, hangar_details,
// the catalog) hold refs only and a secret exists in memory just for the
// backend that needs it. The backend's stderr and exit text are scrubbed
// of those values.
type SecretLauncher struct {
	Next    provider.Launcher
	Secrets store.Secrets
}

var (
	_ provider.Launcher = (*SecretLauncher)(nil)
	_ provider.Preparer = (*SecretLauncher)(nil)
)

// Prepare passes the next launcher's preparation (image pulls, digest
// pins, signatures) through; it needs no secret values.
func (l *SecretLauncher) Prepare(ctx context.Context, spec *config.Server, progress call.Progress) error {
	if pr, ok := l.Next.(provider.Preparer); ok {
		return pr.Prepare(ctx, spec, progress)
	}
	return nil
}

// Launch implements provider.Launcher.
func (l *SecretLauncher) Launch(ctx context.Context, spec *config.Server) (provider.Backend, error) {
	if spec.Origin != config.OriginInstalled {
		return l.Next.Launch(ctx, spec)
	}
	resolved := cloneSpec(spec)
	var values []string
	err := Unseal(spec.ID, resolved, func(ref string) (string, error) {
		b, err := l.Secrets.Secret(ctx, ref)
		if errors.Is(err, store.ErrNotFound) {
			return "", errors.New("not in the keystore: re-install the server")
		}
		if err != nil {
			return "", err
		}
		values = append(values, string(b))
		return string(b), nil
	})
	if err != nil {
		return nil, fmt.Errorf("resolve secrets: %w", err)
	}
	b, err := l.Next.Launch(ctx, resolved)
	if err != nil {
		return nil, errors.New(Scrub(err.Error(), values))
	}
	if len(values) == 0 {
		return b, nil
	}
	return &scrubbed{Backend: b, secrets: values}, nil
}

// scrubbed hides secret values in what a backend reports about itself.
type scrubbed struct {
	provider.Backend
	secrets []string
}

func (s *scrubbed) Stderr() string { return Scrub(s.Backend.Stderr(), s.secrets) }
func (s *scrubbed) Exit() string   { return Scrub(s.Backend.Exit(), s.secrets) }

// CallTool scrubs errors, which may quote a URL with a credential in it.
func (s *scrubbed) CallTool(ctx context.Context, name string, args any, o *mcpconn.CallOptions) (*mcp.CallToolResult, error) {
	res, err := s.Backend.CallTool(ctx, name, args, o)
	return res, s.scrub(err)
}

// ListTools scrubs errors like CallTool.
func (s *scrubbed) ListTools(ctx context.Context) ([]mcpconn.Tool, error) {
	tools, err := s.Backend.ListTools(ctx)
	return tools, s.scrub(err)
}

func (s *scrubbed) scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := Scrub(err.Error(), s.secrets)
	if msg == err.Error() {
		return err
	}
	return &scrubbedError{msg: msg, err: err}
}

// scrubbedError is an error whose text hides secrets; errors.Is and As
// still see the original.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// cloneSpec copies the fields Unseal writes, so the shared spec keeps its
// placeholders.
func cloneSpec(s *config.Server) *config.Server {
	c := *s
	c.Env = maps.Clone(s.Env)
	c.Headers = maps.Clone(s.Headers)
	c.Args = slices.Clone(s.Args)
	c.Command = slices.Clone(s.Command)
	return &c
}
