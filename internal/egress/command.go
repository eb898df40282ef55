package egress

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
)

// Port is where the proxy listens inside its container.
const Port = 3128

// Config is what one proxy enforces; Args and ParseArgs carry it to
// `hangar egress-proxy` as flags.
type Config struct {
	Listen    string // default ":3128"
	Allow     []string
	Forbidden []netip.Prefix
	// Clients are the source ranges served (see Proxy.Clients).
	Clients []netip.Prefix
}

// Args is c as command-line flags.
func (c Config) Args() []string {
	out := []string{"--listen", c.Listen}
	if c.Listen == "" {
		out[1] = fmt.Sprintf(":%d", Port)
	}
	for _, a := range c.Allow {
		out = append(out, "--allow", a)
	}
	for _, p := range c.Forbidden {
		out = append(out, "--forbid", p.String())
	}
	for _, p := range c.Clients {
		out = append(out, "--client", p.String())
	}
	return out
}

// Events the proxy writes to stdout, one JSON object a line: the gateway
// reads them over its attach to the container. Only these two exist.
const (
	EventReady   = "ready"
	EventRefused = "refused"
)

// Event is one line of the proxy's stdout.
type Event struct {
	Event string `json:"event"`
	Refusal
}

// ParseEvent reads one stdout line; ok is false for anything else.
func ParseEvent(line []byte) (Event, bool) {
	var e Event
	if err := json.Unmarshal(line, &e); err != nil {
		return Event{}, false
	}
	switch e.Event {
	case EventReady:
		return e, true
	case EventRefused:
		return e, e.Reason != "" && e.Host != ""
	}
	return Event{}, false
}

// Main is `hangar egress-proxy`: it serves until ctx ends. Events go to
// stdout, logs to stderr.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("egress-proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg Config
	fs.StringVar(&cfg.Listen, "listen", fmt.Sprintf(":%d", Port), "address to listen on")
	fs.Func("allow", "an allowed host[:port] (repeatable)", func(s string) error {
		cfg.Allow = append(cfg.Allow, s)
		return nil
	})
	fs.Func("forbid", "a range names may not resolve to (repeatable)", func(s string) error {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return err
		}
		cfg.Forbidden = append(cfg.Forbidden, p.Masked())
		return nil
	})
	fs.Func("client", "a source range served (repeatable; default any)", func(s string) error {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return err
		}
		cfg.Clients = append(cfg.Clients, p.Masked())
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("egress-proxy: unexpected arguments %s", strings.Join(fs.Args(), " "))
	}
	allow, err := ParseAllow(cfg.Allow)
	if err != nil {
		return fmt.Errorf("egress-proxy: --allow%w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	ev := &eventWriter{w: stdout}
	p := &Proxy{
		Guard:   &Guard{Allow: allow, Forbidden: cfg.Forbidden},
		Refused: func(r Refusal) { ev.write(Event{Event: EventRefused, Refusal: r}) },
		Log:     log,
		Clients: cfg.Clients,
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("egress-proxy: %w", err)
	}
	log.Info("egress proxy listening", "listen", ln.Addr().String(), "allow", strings.Join(allow.Strings(), ","))
	ev.write(Event{Event: EventReady})
	if err := p.Serve(ctx, ln); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("egress-proxy: %w", err)
	}
	return nil
}

// eventWriter writes whole lines, one at a time, so concurrent refusals
// never interleave.
type eventWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (e *eventWriter) write(ev Event) {
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.w.Write(append(b, '\n'))
}
