package readmodel

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/mcp-hangar/hangar/internal/store"
)

// A server's live log: what the dashboard's log panel shows of one server
// as it happens, its audit entries and the lines its process writes to
// stderr. Follow reads both from where they are kept (the audit trail,
// which every replica writes to when the store is shared; the provider's
// stderr tail, secrets already scrubbed) once a step, and sends what is
// new: no hook on the call path, and a follower costs nothing when nobody
// follows.

// Kinds of LogLine.
const (
	LogAudit  = "audit"
	LogStderr = "stderr"
)

// LogLine is one line of a server's live log.
type LogLine struct {
	Server string `json:"server"`
	Kind   string `json:"kind"`
	// At is when an audit entry was recorded, or when a stderr line was
	// first seen (zero for the lines already in the tail when following
	// began: the tail keeps no times).
	At time.Time `json:"at,omitzero"`
	// Text is the stderr line.
	Text string `json:"text,omitempty"`
	// Audit is the audit entry: names, verdicts and kinds only.
	Audit *LogAuditEntry `json:"audit,omitempty"`
}

// LogAuditEntry is an audit entry as the live log shows it.
type LogAuditEntry struct {
	Identity   string  `json:"identity"`
	Action     string  `json:"action"`
	Tool       string  `json:"tool,omitempty"`
	Allowed    bool    `json:"allowed"`
	Outcome    string  `json:"outcome,omitempty"`
	Reason     string  `json:"reason,omitempty"`
	DurationMs float64 `json:"duration_ms,omitempty"`
	// Rule is the policy rule that decided (store.AuditEntry.Rule).
	Rule string `json:"rule,omitempty"`
}

// FollowBacklog is how many audit entries a follower gets first.
const FollowBacklog = 50

// Follow sends id's log: first the stderr tail and the newest audit
// entries (up to FollowBacklog, oldest first), then every new line as it
// appears, looking every `every`, until ctx ends or send returns false.
// The caller decides whether its caller may read id.
func (m *Model) Follow(ctx context.Context, id string, every time.Duration, send func(LogLine) bool) {
	f := follower{m: m, id: id, lastAudit: -1}
	if !f.poll(ctx, time.Time{}, send) {
		return
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if !f.poll(ctx, now, send) {
				return
			}
		}
	}
}

// follower is what one Follow has sent so far.
type follower struct {
	m  *Model
	id string
	// lastAudit is the ID of the newest audit entry sent (-1: none read
	// yet); lastAt its time, for stores that number no entries.
	lastAudit int64
	lastAt    time.Time
	// seen is the stderr tail up to its last whole line, as last read.
	seen string
}

// poll sends what is new since the last poll; now is zero on the first.
func (f *follower) poll(ctx context.Context, now time.Time, send func(LogLine) bool) bool {
	for _, l := range f.stderr(now) {
		if !send(l) {
			return false
		}
	}
	for _, l := range f.audit(ctx) {
		if !send(l) {
			return false
		}
	}
	return ctx.Err() == nil
}

func (f *follower) stderr(now time.Time) []LogLine {
	p, ok := f.m.provider(f.id)
	if !ok {
		return nil
	}
	cur := p.Snapshot().Stderr
	fresh := newStderr(f.seen, cur)
	if i := strings.LastIndexByte(cur, '\n'); i >= 0 {
		f.seen = cur[:i+1]
	} else {
		f.seen = ""
	}
	var out []LogLine
	for _, line := range fresh {
		out = append(out, LogLine{Server: f.id, Kind: LogStderr, At: now, Text: line})
	}
	return out
}

// newStderr is the whole lines of cur that follow seen (the tail as last
// read, up to its last whole line). A tail that only grew has seen as its
// start; one that dropped its front starts with the rest of seen, from a
// line's start (dockerrt.Tail cuts there); a tail that holds neither is
// a new process's: all of it is new.
func newStderr(seen, cur string) []string {
	fresh := cur
	for i := 0; i < len(seen); {
		if rest := seen[i:]; strings.HasPrefix(cur, rest) {
			fresh = cur[len(rest):]
			break
		}
		j := strings.IndexByte(seen[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
	}
	i := strings.LastIndexByte(fresh, '\n')
	if i < 0 {
		return nil // no whole line yet
	}
	return strings.Split(fresh[:i], "\n")
}

func (f *follower) audit(ctx context.Context) []LogLine {
	if f.m.Audit == nil {
		return nil
	}
	es, err := f.m.Audit.RecentAudit(ctx, f.id, FollowBacklog)
	if err != nil {
		f.m.log().Debug("audit not read for a follower", "mcp_server", f.id, "error", err)
		return nil
	}
	var out []LogLine
	for _, e := range slices.Backward(es) { // oldest first
		if f.lastAudit >= 0 && !f.newer(e) {
			continue
		}
		out = append(out, LogLine{Server: f.id, Kind: LogAudit, At: e.At, Audit: logEntry(e)})
	}
	if len(es) > 0 {
		f.lastAudit, f.lastAt = es[0].ID, es[0].At
	} else if f.lastAudit < 0 {
		f.lastAudit = 0
	}
	return out
}

func (f *follower) newer(e store.AuditEntry) bool {
	if e.ID != 0 || f.lastAudit != 0 {
		return e.ID > f.lastAudit
	}
	return e.At.After(f.lastAt)
}

func logEntry(e store.AuditEntry) *LogAuditEntry {
	return &LogAuditEntry{Identity: e.Identity, Action: e.Action, Tool: e.Tool, Allowed: e.Allowed,
		Outcome: e.Outcome, Reason: e.Reason, DurationMs: e.DurationMs, Rule: e.Rule}
}
