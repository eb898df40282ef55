package manage_test

import (
	"context"
	"sync"
	"testing"

	"github.com/mcp-hangar/hangar/internal/manage"
)

// /events?follow=ID carries that server's log to a subscriber that may
// read it, beside the notifications; nobody else gets it, and the log
// ends with the subscription.
func TestEventsFollow(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	var mu sync.Mutex
	live := map[string]int{} // followers running, by server
	ended := make(chan string, 4)
	h.Svc.Notifier.Follow = func(ctx context.Context, server string, send func(any) bool) {
		mu.Lock()
		live[server]++
		mu.Unlock()
		defer func() { ended <- server }()
		if !send(map[string]any{"server": server, "kind": "stderr", "text": "line 1"}) {
			return
		}
		<-ctx.Done()
	}
	plain := h.subscribe("reader")
	mine := h.subscribeTo("reader", "?follow=mine-a")
	outOfReach := h.subscribeTo("filtered", "?follow=other")

	l := mine.next(t, manage.MethodLog)
	if p := l["params"].(map[string]any); p["server"] != "mine-a" || p["text"] != "line 1" {
		t.Errorf("log frame %v", l)
	}
	// A notification reaches all three; before it, no log frame reached
	// the subscriber that follows nothing or a server out of its reach.
	h.Svc.DiscoveryChanged(context.Background(), []string{"mine-b"})
	for name, ev := range map[string]*events{"plain": plain, "out of reach": outOfReach} {
		if m := ev.next(t, manage.MethodChanged, manage.MethodLog); m["method"] != manage.MethodChanged {
			t.Errorf("%s subscriber got %v", name, m)
		}
	}
	mu.Lock()
	if live["other"] != 0 || live["mine-a"] != 1 {
		t.Errorf("followers started: %v", live)
	}
	mu.Unlock()
	mine.stop()
	if s := <-ended; s != "mine-a" {
		t.Errorf("ended %s", s)
	}
}
