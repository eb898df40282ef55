package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Targets of figures 13 (issue 21) and 14 (issue 26).
const (
	targetPropagation   = time.Second
	targetReadyProvs    = 2 * time.Second
	targetIdleRSSProvs  = 80_000_000
	targetToolsList10k  = 20 * time.Millisecond
	targetSessionsRSS   = 150_000_000
	targetSessionsDrift = 1.10
)

// replicasTargets are figure 13's rows of the targets table.
func (r *Report) replicasTargets(t *table) {
	x := r.Replicas
	if x == nil {
		t.add("Replicas: a change through one replica in force on the other within 1 s", "not measured", "—")
		return
	}
	t.add("Replicas: a change through one replica in force on the other within 1 s",
		fmt.Sprintf("p50 %s, max %s (%d changes)", FormatDuration(x.Propagation.P50), FormatDuration(x.Propagation.Max), x.Propagation.N),
		verdict(x.Propagation.Max <= targetPropagation))
}

// scaleTargets are figure 14's rows of the targets table.
func (r *Report) scaleTargets(t *table) {
	x := r.Scale
	if x == nil {
		t.add("1,000 providers ready ≤ 2 s, idle RSS ≤ 80 MB, tools/list of 10,000 tools ≤ 20 ms", "not measured", "—")
		t.add("10,000 idle 2025-11-25 sessions: RSS ≤ 150 MB, a call's p50 within 10%", "not measured", "—")
		return
	}
	t.add("1,000 configured providers: ready to serve in ≤ 2 s", FormatDuration(x.Ready), verdict(x.Ready <= targetReadyProvs))
	t.add("1,000 configured providers: idle RSS ≤ 80 MB", FormatMB(x.IdleRSS), verdict(x.IdleRSS <= targetIdleRSSProvs))
	t.add("tools/list of their 10,000 tools: median ≤ 20 ms", FormatDuration(x.ToolList.P50), verdict(x.ToolList.P50 <= targetToolsList10k))
	t.add("10,000 idle 2025-11-25 sessions: RSS ≤ 150 MB", FormatMB(x.SessionsRSS), verdict(x.SessionsRSS <= targetSessionsRSS))
	drift := Ratio(x.CallManyOpen.P50, x.CallOne.P50)
	t.add("…and a call's p50 within 10% of the figure with one session",
		fmt.Sprintf("%s vs %s (%s)", FormatDuration(x.CallManyOpen.P50), FormatDuration(x.CallOne.P50), FormatRatio(drift)),
		verdict(drift <= targetSessionsDrift))
}

func (r *Report) figure13(b *strings.Builder) {
	b.WriteString("## 13. Replicas on a shared PostgreSQL store\n\n")
	if r.failed(13, b) {
		return
	}
	x := r.Replicas
	if x == nil {
		b.WriteString("Not run.\n\n")
		return
	}
	t := &table{head: []string{"Measure", "N", "Median", "p99", "Max", "Baseline", "Baseline median", "Ratio (median)"}}
	t.add("Store write (one decision, a transaction): PostgreSQL", strconv.Itoa(x.PostgresWrite.N), FormatDuration(x.PostgresWrite.P50),
		FormatDuration(x.PostgresWrite.P99), FormatDuration(x.PostgresWrite.Max), "SQLite (embedded, the default)",
		FormatDuration(x.SQLiteWrite.P50), FormatRatio(Ratio(x.PostgresWrite.P50, x.SQLiteWrite.P50)))
	t.add(fmt.Sprintf("32 clients, call by name on 2026-07-28, 2 replicas (%.0f calls/s)", x.Two.PerSec), strconv.Itoa(x.Two.Lat.N),
		FormatDuration(x.Two.Lat.P50), FormatDuration(x.Two.Lat.P99), FormatDuration(x.Two.Lat.Max),
		fmt.Sprintf("1 replica (%.0f calls/s)", x.One.PerSec), FormatDuration(x.One.Lat.P50),
		FormatRatio(Ratio(x.Two.Lat.P50, x.One.Lat.P50))+fmt.Sprintf("; throughput %.2f×", x.Two.PerSec/max(x.One.PerSec, 1)))
	t.add("Change propagation: mcp/install and mcp/uninstall answered on r1 → r2's mcp/list agrees", strconv.Itoa(x.Propagation.N),
		FormatDuration(x.Propagation.P50), FormatDuration(x.Propagation.P99), FormatDuration(x.Propagation.Max), "—", "—", "—")
	t.add("2025-11-25 session call landing on the other replica (forwarded to its owner)", strconv.Itoa(x.Forwarded.N),
		FormatDuration(x.Forwarded.P50), FormatDuration(x.Forwarded.P99), FormatDuration(x.Forwarded.Max),
		"the same session's call on its owner", FormatDuration(x.Owner.P50), FormatRatio(Ratio(x.Forwarded.P50, x.Owner.P50))+
			fmt.Sprintf(" (+%s)", FormatDuration(x.Forwarded.P50-x.Owner.P50)))
	b.WriteString(t.String())
	b.WriteString("\nOne PostgreSQL 15 cluster from Debian's packages, started for the run on 127.0.0.1 (fsync on), and two `bin/hangar` replicas of one instance " +
		"(`--replica r1|r2 --advertise-url`) sharing it, each with the math provider warm. Both replicas and every client run on this one machine's two cores: " +
		"two replicas here share the CPU one replica has, so the throughput row shows what the second replica costs, not what a second host would add. " +
		"Propagation is timed from the answer to the write on r1 to r2's `mcp/list` showing the change (polled every 2 ms). " +
		"Forwarding: one session opened on r1; its calls alternate in rounds between r1 and r2 (which forwards them to r1).\n\n")
}

func (r *Report) figure14(b *strings.Builder) {
	b.WriteString("## 14. Scale: 1,000 providers, 10,000 sessions\n\n")
	if r.failed(14, b) {
		return
	}
	x := r.Scale
	if x == nil {
		b.WriteString("Not run.\n\n")
		return
	}
	t := &table{head: []string{"Measure", "Figure", "Target"}}
	t.add(fmt.Sprintf("%d configured providers, %d declared tools: process start → tools/list holds them all", x.Providers, x.Tools),
		FormatDuration(x.Ready), "≤ 2 s: "+verdict(x.Ready <= targetReadyProvs))
	t.add("…idle RSS (VmRSS, 2 s after it is ready)", fmt.Sprintf("%s (%s of it file-backed: the binary)", FormatMB(x.IdleRSS), FormatMB(x.IdleFile)),
		"≤ 80 MB: "+verdict(x.IdleRSS <= targetIdleRSSProvs))
	t.add(fmt.Sprintf("…tools/list, plain HTTP client, until the answer (%s) is read whole (N %d, p99 %s)", FormatMB(int64(x.AnswerBytes)), x.ToolList.N, FormatDuration(x.ToolList.P99)),
		FormatDuration(x.ToolList.P50)+" median", "≤ 20 ms: "+verdict(x.ToolList.P50 <= targetToolsList10k))
	t.add("…then decoding its envelope with encoding/json (the client's own cost, timed apart)",
		FormatDuration(x.ToolListDecode.P50)+" median", "—")
	t.add(fmt.Sprintf("%d idle %s sessions opened (in %s): RSS", x.Sessions, x.SessionsProtocol, FormatDuration(x.OpenSessionsTook)),
		FormatMB(x.SessionsRSS)+fmt.Sprintf(" (one session: %s)", FormatMB(x.OneRSS)), "≤ 150 MB: "+verdict(x.SessionsRSS <= targetSessionsRSS))
	drift := Ratio(x.CallManyOpen.P50, x.CallOne.P50)
	t.add(fmt.Sprintf("%s on a session beside them (N %d)", x.Called, x.CallManyOpen.N),
		fmt.Sprintf("%s median vs %s with one session open (%s)", FormatDuration(x.CallManyOpen.P50), FormatDuration(x.CallOne.P50), FormatRatio(drift)),
		"within 10%: "+verdict(drift <= targetSessionsDrift))
	b.WriteString(t.String())
	b.WriteString("\nThe providers declare their tools in the config (figure 9's shape, ten times as many), so none starts. " +
		"Each tools/list answer is compared byte for byte with the first one, which was decoded whole and its tools counted; " +
		"decoding an answer of this size is the client's JSON library's work, not the gateway's, so it is shown apart. " +
		"The sessions are opened as a 2025-11-25 client opens them (initialize, notifications/initialized) and left idle; `server.max_sessions` is raised for the figure.\n\n")
}
