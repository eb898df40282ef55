package egress

import (
	"bufio"
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
	// Control: the gateway holds the proxy's stdin and writes Control
	// lines to it (the engine's networks as they change); EOF on it means
	// the gateway is gone, and the proxy exits.
	Control bool
}

// Control is one line the gateway writes to a proxy's stdin.
type Control struct {
	// Forbid replaces the engine ranges names may not resolve to
	// (Guard.SetForbidden).
	Forbid []netip.Prefix `json:"forbid"`
}

// maxControlLine bounds a Control line: thousands of ranges.
const maxControlLine = 1 << 20

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
	if c.Control {
		out = append(out, "--control")
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

// Flags is the flag set of `hangar egress-proxy`, which fills cfg.
func Flags(cfg *Config) *flag.FlagSet {
	fs := flag.NewFlagSet("egress-proxy", flag.ContinueOnError)
	fs.StringVar(&cfg.Listen, "listen", fmt.Sprintf(":%d", Port), "`ADDRESS` to listen on")
	fs.Func("allow", "an allowed `HOST[:PORT]` (repeatable)", func(s string) error {
		cfg.Allow = append(cfg.Allow, s)
		return nil
	})
	fs.Func("forbid", "a `CIDR` names may not resolve to (repeatable)", func(s string) error {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return err
		}
		cfg.Forbidden = append(cfg.Forbidden, p.Masked())
		return nil
	})
	fs.Func("client", "a source `CIDR` served (repeatable; default any)", func(s string) error {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return err
		}
		cfg.Clients = append(cfg.Clients, p.Masked())
		return nil
	})
	fs.BoolVar(&cfg.Control, "control", false, "read Control lines on stdin; exit when it ends")
	return fs
}

// Main is `hangar egress-proxy`: it serves until ctx ends (or, with
// --control, stdin ends). Events go to stdout, logs to stderr; Control
// lines come on stdin.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var cfg Config
	fs := Flags(&cfg)
	fs.SetOutput(stderr)
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
	if cfg.Control {
		var stop context.CancelFunc
		ctx, stop = context.WithCancel(ctx)
		defer stop()
		go func() {
			defer stop() // the gateway is gone: so is its proxy
			readControl(stdin, p.Guard, log)
		}()
	}
	log.Info("egress proxy listening", "listen", ln.Addr().String(), "allow", strings.Join(allow.Strings(), ","))
	ev.write(Event{Event: EventReady})
	if err := p.Serve(ctx, ln); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("egress-proxy: %w", err)
	}
	return nil
}

// readControl applies the gateway's Control lines to g until r ends. A
// line that is not one is logged and skipped: the last good one holds.
func readControl(r io.Reader, g *Guard, log *slog.Logger) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxControlLine)
	for sc.Scan() {
		var c Control
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			log.Warn("egress proxy: control line ignored", "error", err)
			continue
		}
		for i, p := range c.Forbid {
			c.Forbid[i] = p.Masked()
		}
		g.SetForbidden(c.Forbid)
		log.Info("egress proxy: engine networks updated", "ranges", len(c.Forbid))
	}
	if err := sc.Err(); err != nil {
		log.Warn("egress proxy: control stream", "error", err)
	}
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
