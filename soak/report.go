package soak

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"time"
)

// Machine describes where a run ran, for the report.
func Machine() string {
	host, _ := os.Hostname()
	kernel, _ := exec.Command("uname", "-r").Output()
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		mem = strings.Join(strings.Fields(line)[1:], " ")
	}
	cpu := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				_, cpu, _ = strings.Cut(l, ": ")
				break
			}
		}
	}
	engine, _ := exec.Command("docker", "version", "--format", "{{.Server.Version}} (API {{.Server.APIVersion}})").Output()
	return fmt.Sprintf("%s: %d CPUs (%s), %s memory, Linux %s, Docker Engine %s, %s; the engine shared with other work",
		host, runtime.NumCPU(), cpu, mem, strings.TrimSpace(string(kernel)), strings.TrimSpace(string(engine)), runtime.Version())
}

// Commit is the checked-out commit, with " (+ uncommitted changes)" when
// tracked files differ from it.
func Commit() string {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, _ := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); len(strings.TrimSpace(string(st))) > 0 {
		c += " (+ uncommitted changes)"
	}
	return c
}

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

func kinds(m map[string]int) string {
	if len(m) == 0 {
		return "—"
	}
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s ×%d", strings.ReplaceAll(k, "|", "/"), m[k]))
	}
	return strings.Join(parts, "; ")
}

// WriteMarkdown writes the report as RELIABILITY.md.
func (r *Report) WriteMarkdown(w io.Writer, machine, commit string) {
	o := r.Options
	fmt.Fprintf(w, "# Reliability: an hour of faults on two replicas\n\n")
	fmt.Fprintf(w, "Written by the soak harness (package `soak`) at the end of its run; do not edit by hand.\n\n")
	fmt.Fprintf(w, "- **Date:** %s to %s (UTC)\n", r.Began.UTC().Format("2006-01-02 15:04:05"), time.Now().UTC().Format("15:04:05"))
	fmt.Fprintf(w, "- **Machine:** %s\n", machine)
	fmt.Fprintf(w, "- **Commit:** %s\n", commit)
	fmt.Fprintf(w, "- **Command:** `%s`\n", o.Command)
	fmt.Fprintf(w, "- **Set-up:** %d gateway replicas (`%s`, instance `%s`) on one PostgreSQL (`%s`), the host's Docker engine through a socket proxy the harness cuts, a round-robin balancer in front (passive and /readyz health checks). Providers: `%s` (stdio containers the gateways start).\n",
		o.Replicas, o.GatewayImage, r.Instance, o.PostgresImage, o.ProviderImage)
	fmt.Fprintf(w, "- **Load:** %s (%s to %s); per client kind (mcp-go and go-sdk, each on 2025-11-25 and 2026-07-28) %d caller(s) of `hangar_call` echo (pause %s) and one writer cycling mcp/install (and mcp/uninstall of its oldest install beyond 5), hangar_approve of a newly discovered server, and hangar_load → hangar_call → hangar_unload (pause %s). Every call goes through the balancer.\n",
		r.LoadEnd.Sub(r.LoadStart).Round(time.Second), r.LoadStart.UTC().Format(time.TimeOnly), r.LoadEnd.UTC().Format(time.TimeOnly),
		o.CallersPerKind, o.CallPause, o.WritePause)
	fmt.Fprintf(w, "- **Faults:** one every %s, in turn: %s. Engine cut %s; crash-loop and hang faults call the faulty provider for %s. A call with no answer in %s is *hung*.\n\n",
		o.FaultEvery, strings.Join(faultOrder, ", "), o.EngineCut, o.ProviderFault, o.HungAfter)

	if len(r.Problems) == 0 {
		fmt.Fprintf(w, "## Verdict: no problem found\n\nNo acknowledged write lost, nothing leaked, every fault recovered from before the next, no call hung.\n\n")
	} else {
		fmt.Fprintf(w, "## Verdict: %d problem(s)\n\n", len(r.Problems))
		for _, p := range r.Problems {
			fmt.Fprintf(w, "- %s\n", p)
		}
		fmt.Fprintln(w)
	}

	fmt.Fprintf(w, "## Per fault\n\n")
	fmt.Fprintf(w, "*Client calls* are the callers' and writers' calls (connects included) that ended in the window, from the fault's start to the next fault's. *Recovered* is when the last failed echo call of the callers (through `hangar_call` or the front door) ended, from the fault's start (— when none failed); *cleared* is when the harness had undone the fault. Calls of the faulty provider itself (crash loop, hang) are counted apart.\n\n")
	fmt.Fprintf(w, "| # | at | fault | cleared after | client calls sent | answered | failed | hung | recovered after | error kinds (op: kind ×n) |\n")
	fmt.Fprintf(w, "|---|---|---|---|---:|---:|---:|---:|---|---|\n")
	for i, win := range r.Windows {
		cleared, rec, name := "—", "—", win.Name
		if f := win.fault; f != nil {
			cleared = f.Cleared.Sub(f.Start).Round(100 * time.Millisecond).String()
			if f.Detail != "" && len(f.Detail) < 40 {
				name += " (" + f.Detail + ")"
			}
		}
		if win.Recovered > 0 {
			rec = win.Recovered.Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(w, "| %d | %s | %s | %s | %d | %d | %d | %d | %s | %s |\n", i, win.Start.UTC().Format(time.TimeOnly), name, cleared,
			win.Sent, win.Answered, win.Failed, win.Hung, rec, kinds(win.ErrKinds))
	}
	fmt.Fprintln(w)
	var faulty []string
	for _, win := range r.Windows {
		if win.FaultSent > 0 {
			faulty = append(faulty, fmt.Sprintf("| %s %s | %d | %d | %d | %d | %s |", win.Start.UTC().Format(time.TimeOnly), win.Name,
				win.FaultSent, win.FaultAnswered, win.FaultFailed, win.FaultHung, kinds(win.FaultKinds)))
		}
	}
	if len(faulty) > 0 {
		fmt.Fprintf(w, "Calls of the faulty providers (answered means a result; the faulty ones must fail fast, not hang):\n\n")
		fmt.Fprintf(w, "| fault | sent | answered | failed | hung | error kinds |\n|---|---:|---:|---:|---:|---|\n%s\n\n", strings.Join(faulty, "\n"))
	}
	var details []string
	for _, f := range r.Faults {
		if len(f.Detail) >= 40 || f.Err != nil {
			d := f.Detail
			if f.Err != nil {
				d += " — error: " + f.Err.Error()
			}
			details = append(details, fmt.Sprintf("- %s %s: %s", f.Start.UTC().Format(time.TimeOnly), f.Name, d))
		}
	}
	if len(details) > 0 {
		fmt.Fprintf(w, "Fault details:\n\n%s\n\n", strings.Join(details, "\n"))
	}

	if len(r.Examples) > 0 {
		fmt.Fprintf(w, "Error kinds, each with the first error text seen:\n\n")
		for _, k := range sortedKeys(r.Examples) {
			fmt.Fprintf(w, "- `%s`: %s\n", k, strings.ReplaceAll(strings.TrimSpace(r.Examples[k]), "\n", " "))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "### Per client kind, whole run\n\n| client | sent | answered | failed | hung |\n|---|---:|---:|---:|---:|\n")
	for _, k := range clientKinds {
		var t [4]int
		for _, win := range r.Windows {
			if bk := win.ByKind[k]; bk != nil {
				for i := range t {
					t[i] += bk[i]
				}
			}
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d |\n", k.Label(), t[0], t[1], t[2], t[3])
	}
	fmt.Fprintln(w)

	s := r.Store
	fmt.Fprintf(w, "## Acknowledged writes, checked in the store\n\n")
	if s.Err != nil {
		fmt.Fprintf(w, "The store could not be read: %v\n\n", s.Err)
	}
	fmt.Fprintf(w, "| write | acknowledged | in the store |\n|---|---:|---:|\n")
	fmt.Fprintf(w, "| installs (mcp/install, not uninstalled since) | %d | %d |\n", s.Installs, s.InstallsFound)
	fmt.Fprintf(w, "| uninstalls (mcp/uninstall: the install gone) | %d | %d |\n", s.Uninstalls, s.UninstallsGone)
	if s.UninstalledUnanswered > 0 {
		fmt.Fprintf(w, "| installs uninstalled without an answer (gone, the uninstall audited) | %d | %d |\n", s.UninstalledUnanswered, s.UninstalledUnanswered)
	}
	fmt.Fprintf(w, "| approvals (hangar_approve: the decision) | %d | %d |\n", s.Approvals, s.ApprovalsFound)
	fmt.Fprintf(w, "| hangar_call on hot-loaded servers (%d hot-loads): their audit entries | %d | %d |\n", s.HotLoads, s.HotCalls, s.HotCallsAudited)
	fmt.Fprintf(w, "| audit entries of all the above (install, uninstall, approve, hot-loaded calls) | %d | %d |\n\n", s.AuditExpected, s.AuditFound)
	if len(s.Lost) == 0 && s.Err == nil {
		fmt.Fprintf(w, "**Lost acknowledged writes: 0.**\n\n")
	} else {
		fmt.Fprintf(w, "**Lost acknowledged writes: %d.**\n\n", len(s.Lost))
		for i, l := range s.Lost {
			if i == 50 {
				fmt.Fprintf(w, "- … and %d more\n", len(s.Lost)-50)
				break
			}
			fmt.Fprintf(w, "- %s\n", l)
		}
		fmt.Fprintln(w)
	}

	fmt.Fprintf(w, "## Leaks\n\n")
	fmt.Fprintf(w, "Figures from each replica's /metrics (`go_goroutines`, `process_open_fds`, `process_resident_memory_bytes`, `hangar_sessions_open`). *Before*: after warm-up; *after*: once the load stopped and the clients left (sessions given up to `session_idle_ttl` + 45 s: those whose DELETE was lost end after `session_idle_ttl`, %s here); *peak*: the sample with the most goroutines (every 15 s). A replica SIGKILLed during the run is a younger process after it.\n\n", o.SessionIdleTTL)
	fmt.Fprintf(w, "| replica | goroutines before / peak / after | fds before / peak / after | RSS before / peak / after | sessions after | process started |\n|---|---|---|---|---:|---|\n")
	for _, name := range sortedKeys(r.Before) {
		b, pk, a := r.Before[name], r.Peak[name], r.After[name]
		started := "—"
		if a.Started > 0 {
			started = time.Unix(int64(a.Started), 0).UTC().Format(time.TimeOnly)
			if b.Started > 0 && a.Started != b.Started {
				started += " (restarted)"
			}
		}
		fmt.Fprintf(w, "| %s | %v / %v / %v | %v / %v / %v | %s / %s / %s | %v | %s |\n", name, b.Goroutines, pk.Goroutines, a.Goroutines,
			b.FDs, pk.FDs, a.FDs, mib(b.RSS), mib(pk.RSS), mib(a.RSS), a.Sessions, started)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Containers of the instance (label `io.mcp-hangar.owner=%s`) when the load stopped: %d", r.Instance, len(r.Containers))
	if len(r.Containers) > 0 && len(r.Containers) <= 20 {
		fmt.Fprintf(w, " (%s)", strings.Join(r.Containers, "; "))
	}
	fmt.Fprintf(w, ". Left after both replicas stopped (SIGTERM; they took %s): **%d**", r.StopTook.Round(100*time.Millisecond), len(r.Leaked))
	if len(r.Leaked) > 0 && len(r.Leaked) <= 20 {
		fmt.Fprintf(w, " (%s)", strings.Join(r.Leaked, "; "))
	}
	fmt.Fprintf(w, ".\n")
	if r.StopErr != nil {
		fmt.Fprintf(w, "\nStopping the gateways: %v\n", r.StopErr)
	}
}
