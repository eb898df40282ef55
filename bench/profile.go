package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// Figure 10: where the gateway's CPU goes under the 32-client load of
// figure 1: a CPU profile of a gateway inside this process (the same code
// as bin/hangar), with the bench's own client side left out, reduced to
// its top functions by `go tool pprof`.

// profileIgnore drops the bench's clients from the profile: its code, the
// HTTP client transport and mcp-go's streamable HTTP client. The gateway's
// own client to its provider (stdio) stays.
const profileIgnore = `^main\.|persistConn|transport\.\(\*StreamableHTTP\)|http\.\(\*Client\)|http\.\(\*Transport\)`

// ProfileResult is figure 10.
type ProfileResult struct {
	Calls   int
	Took    time.Duration
	Samples string     // pprof's header line about the total
	Top     [][]string // flat, flat%, cum, cum%, function
	Cum     [][]string // the same, gateway and mcp-go functions by cum
	Skipped string
	// AllocsPerCall is BenchmarkFrontDoorCallHTTP's allocs/op: a call by
	// callable name through the whole HTTP handler; 0 when not measured.
	AllocsPerCall int
	AllocsErr     string
}

// allocsBefore is BenchmarkFrontDoorCallHTTP's allocs/op at commit
// allocsBeforeCommit, the code issue 26 was written against (the last
// commit before its first change): its target is half of it.
const (
	allocsBefore       = 394
	allocsBeforeCommit = "e42a2dd"
)

// allocsPerCall runs the Go benchmark of a call by callable name and
// returns its allocations per call.
func allocsPerCall(ctx context.Context) (int, error) {
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^BenchmarkFrontDoorCallHTTP$", "-benchmem", "-benchtime", "2000x", "./internal/gateway/")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("go test -bench BenchmarkFrontDoorCallHTTP: %w: %s", err, lastLines(out, 5))
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		for i := 1; i < len(f); i++ {
			if f[i] == "allocs/op" && strings.HasPrefix(line, "BenchmarkFrontDoorCallHTTP") {
				return strconv.Atoi(f[i-1])
			}
		}
	}
	return 0, fmt.Errorf("go test -bench BenchmarkFrontDoorCallHTTP: no allocs/op in %s", lastLines(out, 5))
}

func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}

// Profile measures figure 10.
func (b *Bench) Profile(ctx context.Context, profiling bool) (*ProfileResult, error) {
	if profiling {
		return &ProfileResult{Skipped: "not measured: the bench itself runs under -cpuprofile, and Go allows one CPU profile at a time"}, nil
	}
	_, url, stop, err := b.inProcessGateway(ctx, "profile")
	if err != nil {
		return nil, err
	}
	defer stop()
	clis, err := DialN(ctx, url, 32)
	if err != nil {
		return nil, err
	}
	defer CloseAll(clis)
	if _, err := clis[0].MustCall(ctx, "hangar_warm", map[string]any{"mcp_servers": "math"}); err != nil {
		return nil, err
	}
	// Calls by callable name: issue 38's figures are theirs. The front
	// door lists the warm provider's tools within its refresh.
	byName := frontDoorAdd(clis[0], "math__add")
	for deadline := time.Now().Add(10 * time.Second); ; {
		err := byName(ctx, 0)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("front door: math__add never answered: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	workers := make([]callFn, len(clis))
	for i, c := range clis {
		workers[i] = frontDoorAdd(c, "math__add")
	}
	if _, _, err := measure(ctx, workers, 5); err != nil { // warm-up
		return nil, err
	}
	file := filepath.Join(b.tmp, "gateway-32.cpu")
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	res := &ProfileResult{}
	if n, err := allocsPerCall(ctx); err != nil {
		res.AllocsErr = err.Error()
	} else {
		res.AllocsPerCall = n
	}
	// Rounds until about 5 s of load (less with -quick), for enough
	// samples at 100 Hz.
	for res.Took < time.Duration(float64(5*time.Second)*b.scale) {
		lat, wall, err := measure(ctx, workers, 20)
		if err != nil {
			pprof.StopCPUProfile()
			f.Close()
			return nil, err
		}
		res.Calls += len(lat)
		res.Took += wall
	}
	pprof.StopCPUProfile()
	f.Close()
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	top := func(args ...string) ([]byte, error) {
		args = append(append([]string{"tool", "pprof", "-top", "-ignore=" + profileIgnore}, args...), self, file)
		out, err := exec.CommandContext(ctx, "go", args...).Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("go tool pprof: %w: %s", err, ee.Stderr)
		}
		return out, err
	}
	out, err := top("-nodecount=20")
	if err != nil {
		return nil, err
	}
	res.Samples, res.Top = parseTop(out)
	if out, err = top("-cum", "-nodecount=30", "-show=mcp-hangar/hangar/internal|mark3labs/mcp-go"); err != nil {
		return nil, err
	}
	_, res.Cum = parseTop(out)
	return res, nil
}

// parseTop reads `go tool pprof -top` output.
func parseTop(out []byte) (string, [][]string) {
	var header string
	var rows [][]string
	inTable := false
	for _, line := range strings.Split(string(bytes.TrimSpace(out)), "\n") {
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "Showing nodes accounting"):
			header = strings.TrimSpace(line)
		case len(f) >= 1 && f[0] == "flat":
			inTable = true
		case inTable && len(f) >= 6:
			name := strings.Join(f[5:], " ")
			if i := strings.IndexByte(name, '['); i > 0 && len(name) > 100 {
				name = name[:i] + "[…]" // a generic instance's full type list
			}
			rows = append(rows, []string{f[0], f[1], f[3], f[4], "`" + name + "`"})
		}
	}
	return header, rows
}

func (r *Report) figure10(b *strings.Builder) {
	b.WriteString("## 10. Where the gateway's CPU goes (32 clients, add by its callable name)\n\n")
	if r.failed(10, b) {
		return
	}
	x := r.Profile
	switch {
	case x == nil:
		b.WriteString("Not run.\n\n")
		return
	case x.Skipped != "":
		b.WriteString(x.Skipped + ".\n\n")
		return
	}
	t := &table{head: []string{"flat", "flat %", "cum", "cum %", "Function"}}
	for _, row := range x.Top {
		t.add(row...)
	}
	b.WriteString("By own time (flat):\n\n" + t.String())
	ct := &table{head: t.head}
	for _, row := range x.Cum {
		ct.add(row...)
	}
	b.WriteString("\nThe gateway's and mcp-go's functions by cumulative time:\n\n" + ct.String())
	fmt.Fprintf(b, "\nA CPU profile of a gateway running inside the bench process (the same packages as bin/hangar, JSON logs at INFO) while 32 sessions make %d calls of `math__add` (the callable name) in %s, "+
		"with the bench's client side ignored (`-ignore=%s`). %s. "+
		"`go test -run '^$' -bench . -benchmem ./internal/gateway/ ./internal/batch/ ./internal/mcpconn/` has the per-function benchmarks.\n\n",
		x.Calls, FormatDuration(x.Took), profileIgnore, x.Samples)
	b.WriteString("### Before the hot-path work\n\nThe same tables from the run of 2026-11-23 19:39 UTC (commit e1b8e24), before issue 14's changes (then of `hangar_call` add calls, which add the batch envelope to a call by name), so the two can be read side by side:\n\n")
	_, before, _ := strings.Cut(profileBefore, "-->\n")
	b.WriteString(strings.TrimSpace(before) + "\n\n")
}

// profileBefore is figure 10 as it stood before the hot-path work.
//
//go:embed profile_before.md
var profileBefore string
