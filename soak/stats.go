package soak

import (
	"context"
	"errors"
	"io"
	"net"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Outcomes of one call.
const (
	outcomeOK     = "answered"
	outcomeFailed = "failed"
	outcomeHung   = "hung"
)

// event is one call the clients made.
type event struct {
	kind    clientKind
	op      string // call, install, uninstall, approve, hotload, hotload_call, unload, connect, fault:<name>
	start   time.Time
	end     time.Time
	outcome string
	errKind string
	detail  string // the error's text, for the report's examples
}

// ledger records every call, and every write the gateway acknowledged,
// for the report and for the check of the store.
type ledger struct {
	mu     sync.Mutex
	events []event

	// examples is the first error text seen per op and kind.
	examples map[string]string

	installs    map[string]time.Time // acknowledged mcp/install, by server name
	uninstalled map[string]time.Time // acknowledged mcp/uninstall
	// uninstallSent are mcp/uninstall requests sent and not acknowledged
	// (no answer, an error, or the load stopping under them): made or
	// not, the store and the audit tell.
	uninstallSent map[string]time.Time
	approvals     map[string]time.Time // acknowledged hangar_approve, by server
	hotCalls      map[string]int       // acknowledged hangar_call on hot-loaded servers, by server
	hotLoads      int
}

func newLedger() *ledger {
	return &ledger{examples: map[string]string{}, installs: map[string]time.Time{}, uninstalled: map[string]time.Time{},
		uninstallSent: map[string]time.Time{},
		approvals:     map[string]time.Time{}, hotCalls: map[string]int{}}
}

func (l *ledger) add(e event) {
	l.mu.Lock()
	if k := e.op + ": " + e.errKind; e.errKind != "" && l.examples[k] == "" {
		d := e.detail
		if len(d) > 300 {
			d = d[:300] + "…"
		}
		l.examples[k] = d
	}
	e.detail = ""
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *ledger) ack(f func(l *ledger)) {
	l.mu.Lock()
	f(l)
	l.mu.Unlock()
}

// classify names what went wrong with a call that got no answer.
func classify(ctx context.Context, err error, hungAfter time.Duration, began time.Time) (outcome, kind string) {
	if err == nil {
		return outcomeOK, ""
	}
	if errors.Is(err, context.DeadlineExceeded) && time.Since(began) >= hungAfter-time.Second {
		return outcomeHung, "no_answer"
	}
	s := strings.ToLower(err.Error())
	var ne net.Error
	switch {
	case errors.Is(err, errVersion):
		kind = "other_protocol_version"
	case errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(s, "connection refused"):
		kind = "connection_refused"
	case errors.Is(err, syscall.ECONNRESET) || strings.Contains(s, "connection reset"):
		kind = "connection_reset"
	case errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(s, "unexpected eof") || strings.HasSuffix(s, ": eof"):
		kind = "connection_closed"
	case strings.Contains(s, "session") && (strings.Contains(s, "not found") || strings.Contains(s, "404")):
		kind = "session_lost"
	case strings.Contains(s, "404"):
		kind = "http_404"
	case strings.Contains(s, "502") || strings.Contains(s, "bad gateway"):
		kind = "http_502"
	case strings.Contains(s, "503"):
		kind = "http_503"
	case strings.Contains(s, "500") || strings.Contains(s, "internal server error"):
		kind = "http_500"
	case errors.As(err, &ne) && ne.Timeout():
		kind = "timeout"
	case errors.Is(err, context.Canceled):
		kind = "canceled"
	default:
		kind = "other(" + firstWords(s, 8) + ")"
	}
	return outcomeFailed, kind
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = f[:n]
	}
	return strings.Join(f, " ")
}

// window is one stretch of the run: the baseline before the first fault,
// or one fault until the next. A call belongs to the window it ended in.
type window struct {
	Name       string
	Start, End time.Time
	fault      *faultRecord

	Sent, Answered, Failed, Hung int
	ErrKinds                     map[string]int // failed and hung calls by kind
	// FaultSent... count the calls aimed at the faulty provider itself
	// (crash loop, hang), apart from the clients' own traffic.
	FaultSent, FaultAnswered, FaultFailed, FaultHung int
	FaultKinds                                       map[string]int
	ByKind                                           map[clientKind]*[4]int // sent, answered, failed, hung
	// Recovered is how long after the fault's start the last failed
	// echo call of the callers (hangar_call or front door) ended; 0 when
	// none failed.
	Recovered time.Duration
}

// windows cuts the events into the baseline and one window per fault.
func (l *ledger) windows(runStart, runEnd time.Time, faults []*faultRecord) []*window {
	ws := []*window{{Name: "baseline (no fault)", Start: runStart, End: runEnd}}
	for i, f := range faults {
		if i == 0 {
			ws[0].End = f.Start
		}
		end := runEnd
		if i+1 < len(faults) {
			end = faults[i+1].Start
		}
		ws = append(ws, &window{Name: f.Name, Start: f.Start, End: end, fault: f})
	}
	for _, w := range ws {
		w.ErrKinds, w.FaultKinds, w.ByKind = map[string]int{}, map[string]int{}, map[clientKind]*[4]int{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		// By the call's end: a call a fault broke ended after the fault
		// began, even when it started before.
		i := sort.Search(len(ws), func(i int) bool { return ws[i].End.After(e.end) })
		if i == len(ws) {
			i = len(ws) - 1
		}
		w := ws[i]
		if strings.HasPrefix(e.op, "fault:") {
			w.FaultSent++
			switch e.outcome {
			case outcomeOK:
				w.FaultAnswered++
			case outcomeFailed:
				w.FaultFailed++
				w.FaultKinds[e.errKind]++
			case outcomeHung:
				w.FaultHung++
				w.FaultKinds[e.errKind]++
			}
			continue
		}
		bk := w.ByKind[e.kind]
		if bk == nil {
			bk = &[4]int{}
			w.ByKind[e.kind] = bk
		}
		w.Sent++
		bk[0]++
		switch e.outcome {
		case outcomeOK:
			w.Answered++
			bk[1]++
		case outcomeFailed:
			w.Failed++
			bk[2]++
			w.ErrKinds[e.op+": "+e.errKind]++
		case outcomeHung:
			w.Hung++
			bk[3]++
			w.ErrKinds[e.op+": "+e.errKind]++
		}
		// Recovery is read on the callers' steady traffic; the writers'
		// failures are in the counts and kinds.
		if e.outcome != outcomeOK && w.fault != nil && (e.op == "call" || e.op == "frontdoor") {
			if d := e.end.Sub(w.Start); d > w.Recovered {
				w.Recovered = d
			}
		}
	}
	return ws
}
