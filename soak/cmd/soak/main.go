// Command soak runs hangar's reliability harness (package soak) and writes
// its report: `make soak` runs it for SOAK_DURATION (default 1h) and
// writes RELIABILITY.md. It exits 1 when the run found problems (the
// report says which), 2 when the run could not be made.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-hangar/hangar/soak"
)

func main() {
	var o soak.Options
	out := flag.String("out", "RELIABILITY.md", "where the report is written")
	notes := flag.String("notes", "", "a Markdown file appended to the report under \"Notes\" (what was fixed, what is known)")
	flag.DurationVar(&o.Duration, "duration", time.Hour, "how long the load and the faults run")
	flag.DurationVar(&o.FaultEvery, "fault-every", 3*time.Minute, "time between fault starts")
	flag.DurationVar(&o.EngineCut, "engine-cut", 30*time.Second, "how long the Docker engine's socket stays cut")
	flag.DurationVar(&o.ProviderFault, "provider-fault", 30*time.Second, "how long the crash-looping and the hanging provider are called")
	flag.DurationVar(&o.HungAfter, "hung-after", 60*time.Second, "a call without an answer by then is counted hung")
	flag.IntVar(&o.CallersPerKind, "callers", 1, "callers per client kind")
	flag.StringVar(&o.GatewayImage, "gateway-image", "mcp-hangar/gateway:dev", "the gateway image")
	flag.StringVar(&o.PostgresImage, "postgres-image", "mcp-hangar/postgres:dev", "the PostgreSQL image")
	flag.StringVar(&o.ProviderImage, "provider-image", "mcp-hangar/testkit:dev", "the providers' image (testkit)")
	flag.StringVar(&o.DockerSocket, "docker-socket", "/var/run/docker.sock", "the engine's socket (the harness's docker commands use it too)")
	flag.BoolVar(&o.AcceptBridge, "accept-bridge", false, "add an iptables DOCKER-USER rule letting the stack's bridge forward to itself (an engine run with iptables off)")
	flag.Parse()
	if o.DockerSocket != "/var/run/docker.sock" {
		os.Setenv("DOCKER_HOST", "unix://"+o.DockerSocket)
	}
	o.Command = "go run ./soak/cmd/soak " + strings.Join(os.Args[1:], " ")
	if c := os.Getenv("SOAK_COMMAND"); c != "" {
		o.Command = c
	}
	o.Log = func(f string, a ...any) {
		fmt.Fprintf(os.Stderr, "%s soak: %s\n", time.Now().UTC().Format(time.TimeOnly), fmt.Sprintf(f, a...))
	}
	// Read before the run: the report then names what was built and run,
	// and creating the report (RELIABILITY.md is tracked) is no change.
	commit := soak.Commit()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := soak.Run(ctx, o)
	if rep == nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n", err)
		os.Exit(2)
	}
	f, ferr := os.Create(*out)
	if ferr != nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n", ferr)
		os.Exit(2)
	}
	rep.WriteMarkdown(f, soak.Machine(), commit)
	if *notes != "" {
		b, err := os.ReadFile(*notes)
		if err != nil {
			fmt.Fprintf(os.Stderr, "soak: %v\n", err)
		}
		fmt.Fprintf(f, "\n## Notes\n\n%s", b)
	}
	if ferr := f.Close(); ferr != nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n", ferr)
		os.Exit(2)
	}
	fmt.Fprintf(os.Stderr, "soak: report written to %s\n", *out)
	if err != nil || len(rep.Problems) > 0 {
		for _, p := range rep.Problems {
			fmt.Fprintf(os.Stderr, "soak: problem: %s\n", p)
		}
		os.Exit(1)
	}
}
