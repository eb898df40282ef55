package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Figure 15: what the gateway weighs before it does anything: its binary
// (size and modules linked), and what `hangar version`, which only runs
// the packages' init work, keeps resident.

// BinaryResult is figure 15.
type BinaryResult struct {
	Size    int64 // the binary under test, as built (make build: -w)
	Modules int   // `go version -m`: the dep lines
	// DWARFSize is the same source linked with DWARF, as rounds 2 and 3
	// were built, for a like-for-like row; 0 when it could not be built.
	DWARFSize int64
	// VersionRSS is `hangar version`'s peak RSS (its maxrss, read by
	// time(1)); 0 when /usr/bin/time is missing.
	VersionRSS int64
}

// release is an earlier release's figures, as issue 38 gives them
// (measured then, with DWARF in the binary).
type release struct {
	Name    string
	Size    int64
	Modules int
	Idle    string // idle RSS with one provider, as measured then
}

var earlierReleases = []release{
	{"round 2", 30_800_000, 70, "27.1 MiB"},
	{"round 3", 60_800_000, 112, "39.5 MiB"},
}

// Targets of issue 38.
const (
	targetBinary      = 40_000_000
	targetIdle1       = 28 << 20 // MiB
	targetPeak32      = 50 << 20
	targetByName32CPU = 200 * time.Microsecond
)

// Binary measures figure 15 for the binary at bin.
func (b *Bench) Binary(ctx context.Context, bin string) (*BinaryResult, error) {
	fi, err := os.Stat(bin)
	if err != nil {
		return nil, err
	}
	res := &BinaryResult{Size: fi.Size()}
	out, err := exec.CommandContext(ctx, "go", "version", "-m", bin).Output()
	if err != nil {
		return nil, fmt.Errorf("go version -m: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "dep\t") {
			res.Modules++
		}
	}
	// The child's maxrss as this process reads it would be this
	// process's own: Go starts a child with vfork, and the kernel keeps
	// the high-water mark of the memory the child shared before exec. A
	// small parent, time(1), reads the child alone.
	if timeBin, err := exec.LookPath("/usr/bin/time"); err == nil {
		out, err := exec.CommandContext(ctx, timeBin, "-f", "%M", bin, "version").CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("%s version: %w: %s", bin, err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if kib, err := strconv.ParseInt(strings.TrimSpace(lines[len(lines)-1]), 10, 64); err == nil {
			res.VersionRSS = kib << 10
		}
	} else {
		b.log.Warn("figure 15: /usr/bin/time is missing: hangar version's peak RSS is not measured")
	}
	// The same source with DWARF: only from a source tree.
	if _, err := os.Stat("cmd/hangar"); err == nil {
		dwarf := filepath.Join(b.tmp, "hangar-dwarf")
		build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", dwarf, "./cmd/hangar")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if err := build.Run(); err == nil {
			if fi, err := os.Stat(dwarf); err == nil {
				res.DWARFSize = fi.Size()
			}
		} else {
			b.log.Warn("figure 15: the binary with DWARF was not built", "error", err)
		}
	}
	return res, nil
}

func (r *Report) binaryTargets(t *table) {
	x := r.Binary
	if x == nil {
		return
	}
	t.add(fmt.Sprintf("Binary ≤ %s (make build)", FormatMB(targetBinary)),
		fmt.Sprintf("%s, %d modules (%s with DWARF)", FormatMB(x.Size), x.Modules, FormatMB(x.DWARFSize)), verdict(x.Size <= targetBinary))
}

// formatMiB prints bytes in MiB, for the targets issue 38 set in MiB.
func formatMiB(v int64) string { return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20)) }

func (r *Report) figure15(b *strings.Builder) {
	b.WriteString("## 15. Binary and start-up weight\n\n")
	if r.failed(15, b) {
		return
	}
	x := r.Binary
	if x == nil {
		b.WriteString("Not run.\n\n")
		return
	}
	idle := "—"
	if r.Mem.Idle1 > 0 {
		idle = formatMiB(r.Mem.Idle1)
	}
	t := &table{head: []string{"Release", "Binary (as built)", "Binary with DWARF", "Modules linked", "Idle RSS, 1 provider"}}
	for _, rel := range earlierReleases {
		t.add(rel.Name, "—", FormatMB(rel.Size), fmt.Sprint(rel.Modules), rel.Idle)
	}
	dwarf := "—"
	if x.DWARFSize > 0 {
		dwarf = FormatMB(x.DWARFSize)
	}
	t.add("this run", FormatMB(x.Size), dwarf, fmt.Sprint(x.Modules), idle)
	b.WriteString(t.String())
	if x.VersionRSS > 0 {
		fmt.Fprintf(b, "\n`hangar version` (the packages' init work and nothing else) peaks at %s resident (round 2: 18.2 MiB, round 3: 28.6 MiB; read by time(1): Go starts a child with vfork, and the kernel counts the parent's pages in the child's high-water mark). ", formatMiB(x.VersionRSS))
	} else {
		b.WriteString("\n")
	}
	b.WriteString("Earlier releases' figures are issue 38's, measured on binaries linked with DWARF; `make build` now links with `-w` (no DWARF: 9 MB that are never loaded; the symbol table stays, so panics, pprof and `go tool nm` work), so the DWARF column compares like with like. " +
		"The modules are `go version -m`'s dep lines. Where the bytes and the resident pages go, and what was cut: [docs/performance.md](docs/performance.md).\n\n")
}
