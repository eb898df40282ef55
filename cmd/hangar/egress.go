package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcp-hangar/hangar/internal/egress"
)

// egressProxy is `hangar egress-proxy`: the forward proxy the gateway runs
// in a hardened container for each server with egress. It stops on
// SIGTERM or SIGINT.
func egressProxy(args []string, out io.Writer) error {
	if helpAsked(args) {
		usage{lines: []string{"hangar egress-proxy [flags]"},
			about: "The forward proxy the gateway runs in a hardened container for each server with egress " +
				"(docs/security.md): it lets CONNECT and HTTP requests through to the allowed hosts only.",
		}.print(out, egress.Flags(&egress.Config{}))
		return errHelpShown
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return egress.Main(ctx, args, os.Stdin, out, os.Stderr)
}
