package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcp-hangar/hangar/internal/egress"
)

// egressProxy is `hangar egress-proxy`: the forward proxy the gateway runs
// in a hardened container for each server with egress. It stops on
// SIGTERM or SIGINT.
func egressProxy(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return egress.Main(ctx, args, os.Stdout, os.Stderr)
}
