package soak

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"
)

// TestWindows: a call belongs to the window it ended in (a call a fault
// broke ended after the fault began); recovery is when the last failed
// client call of the window ended; calls of the faulty provider are
// counted apart.
func TestWindows(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	l := newLedger()
	l.add(event{kind: mcpgoLegacy, op: "call", start: at(1), end: at(2), outcome: outcomeOK})
	l.add(event{kind: mcpgoLegacy, op: "call", start: at(9), end: at(11), outcome: outcomeFailed, errKind: "http_502"})
	l.add(event{kind: sdkModern, op: "call", start: at(12), end: at(14.5), outcome: outcomeFailed, errKind: "session_lost", detail: "session not found"})
	l.add(event{kind: sdkModern, op: "fault:crashy", start: at(21), end: at(22), outcome: outcomeFailed, errKind: "start_failed"})
	l.add(event{kind: sdkModern, op: "call", start: at(21), end: at(23), outcome: outcomeOK})
	faults := []*faultRecord{{Name: faultReplicaKill, Start: at(10)}, {Name: faultCrashLoop, Start: at(20)}}
	ws := l.windows(at(0), at(30), faults)
	if len(ws) != 3 {
		t.Fatalf("%d windows, want 3", len(ws))
	}
	if w := ws[0]; w.Sent != 1 || w.Failed != 0 {
		t.Errorf("baseline sent %d failed %d, want 1 and 0", w.Sent, w.Failed)
	}
	w := ws[1]
	if w.Sent != 2 || w.Failed != 2 || w.ErrKinds["call: http_502"] != 1 || w.ErrKinds["call: session_lost"] != 1 {
		t.Errorf("kill window: sent %d failed %d kinds %v", w.Sent, w.Failed, w.ErrKinds)
	}
	if w.Recovered != 4500*time.Millisecond {
		t.Errorf("recovered after %s, want 4.5s", w.Recovered)
	}
	if w := ws[2]; w.Sent != 1 || w.Answered != 1 || w.FaultSent != 1 || w.FaultFailed != 1 || w.Recovered != 0 {
		t.Errorf("crash-loop window: %+v", w)
	}
	if got := l.examples["call: session_lost"]; got != "session not found" {
		t.Errorf("example of session_lost = %q", got)
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), "connection_refused"},
		{errors.New("transport error: request failed with status 502:"), "http_502"},
		{errors.New(`standalone SSE stream: failed to connect (session ID: X): session not found`), "session_lost"},
		{fmt.Errorf("%w: go-sdk session speaks %q", errVersion, "2025-11-25"), "other_protocol_version"},
	} {
		if _, got := classify(context.Background(), tc.err, time.Minute, time.Now()); got != tc.want {
			t.Errorf("classify(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
	if out, kind := classify(context.Background(), context.DeadlineExceeded, time.Second, time.Now().Add(-2*time.Second)); out != outcomeHung || kind != "no_answer" {
		t.Errorf("a call past hung-after = %s %s, want hung", out, kind)
	}
}
