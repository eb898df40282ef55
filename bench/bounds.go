package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Figure 8: memory stays bounded by what the limits say. Peak RSS is
// VmHWM of the gateway process (/proc/<pid>/status), which the kernel keeps
// however loaded the machine is, so this figure is valid on a busy host.
//
//   - A 20 MB request body against execution.max_request_body_bytes of
//     1 MiB, announced by Content-Length and sent chunked: the peak must
//     rise by less than 16 MB.
//   - A 60 MiB provider answer (testkit `big`) through hangar_call with the
//     default response limits: the peak must stay under 160 MB, and RSS
//     must come back within 20% of idle once the continuation expires.

const (
	boundsBodyLimit    = 1 << 20
	boundsBodyBytes    = 20_000_000
	boundsBigBytes     = 60 << 20
	boundsContTTL      = 5 * time.Second
	targetBodyHWMDelta = 16_000_000
	targetBigPeak      = 160_000_000
	targetBackToIdle   = 1.20
)

// BoundsResult is figure 8.
type BoundsResult struct {
	IdleRSS int64 // one warm testkit provider, before anything big

	BodyHWMBefore, BodyHWMAfter int64
	BodyStatus                  []int // HTTP status of the announced and the chunked request
	BodyTook                    time.Duration

	BigHWMBefore, BigPeak int64
	BigTruncated          bool
	BigTotal              int // total_size_bytes the answer reports
	BigInline             int // bytes of the inline result
	BigTook               time.Duration
	AfterExpiry           int64         // RSS once the continuation has expired
	ExpiryWait            time.Duration // from the answer until RSS was back (or gave up)
	// What the idle and the last readings were made of: anonymous pages
	// (the heap, stacks) and file-backed ones (the binary's pages).
	Idle, After rssParts
}

// rssParts is RssAnon and RssFile of /proc/<pid>/status.
type rssParts struct{ Anon, File int64 }

func readRSSParts(pid int) rssParts {
	var p rssParts
	p.Anon, _ = readStatusBytes(pid, "RssAnon")
	p.File, _ = readStatusBytes(pid, "RssFile")
	return p
}

func boundsYAML() string {
	return configYAML([]srvDef{{"kit", testkitImage}},
		"batch:\n  continuation_ttl_s: "+strconv.Itoa(int(boundsContTTL/time.Second))+"\n")
}

// Bounds measures figure 8 on its own gateway.
func (b *Bench) Bounds(ctx context.Context) (*BoundsResult, error) {
	yaml := strings.Replace(boundsYAML(), "execution:\n", "execution:\n  max_request_body_bytes: "+strconv.Itoa(boundsBodyLimit)+"\n", 1)
	g, err := b.StartGateway("bounds", yaml)
	if err != nil {
		return nil, err
	}
	defer stopGateway(g, b.log)
	c, err := Dial(ctx, g.MCPURL)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if _, err := c.MustCall(ctx, "hangar_warm", map[string]any{"mcp_servers": "kit"}); err != nil {
		return nil, err
	}
	// A small call first, so the idle reading includes a used call path.
	if err := checkBatch(c.Call(ctx, "hangar_call", oneCall("kit", "big", map[string]any{"bytes": 1000}))); err != nil {
		return nil, err
	}
	res := &BoundsResult{}
	if res.IdleRSS, err = settleRSS(g); err != nil {
		return nil, err
	}
	res.Idle = readRSSParts(g.Pid())

	// The body.
	if res.BodyHWMBefore, err = readStatusBytes(g.Pid(), "VmHWM"); err != nil {
		return nil, err
	}
	t := time.Now()
	for _, announced := range []bool{true, false} {
		st, err := postBig(ctx, g.MCPURL, boundsBodyBytes, announced)
		if err != nil {
			return nil, fmt.Errorf("20 MB body (announced %v): %w", announced, err)
		}
		res.BodyStatus = append(res.BodyStatus, st)
	}
	res.BodyTook = time.Since(t)
	if res.BodyHWMAfter, err = readStatusBytes(g.Pid(), "VmHWM"); err != nil {
		return nil, err
	}

	// The big answer. The peak so far (the body step) is below the
	// answer's, so VmHWM after the call is the call's peak.
	if res.BigHWMBefore, err = readStatusBytes(g.Pid(), "VmHWM"); err != nil {
		return nil, err
	}
	t = time.Now()
	r, err := c.Call(ctx, "hangar_call", oneCall("kit", "big", map[string]any{"bytes": boundsBigBytes}))
	res.BigTook = time.Since(t)
	if err != nil {
		return nil, fmt.Errorf("60 MiB answer: %w", err)
	}
	if res.BigPeak, err = readStatusBytes(g.Pid(), "VmHWM"); err != nil {
		return nil, err
	}
	m := resultJSON(r)
	results, _ := m["results"].([]any)
	if len(results) != 1 {
		return nil, fmt.Errorf("60 MiB answer: not one result: %.300s", resultText(r))
	}
	one, _ := results[0].(map[string]any)
	res.BigTruncated, _ = one["truncated"].(bool)
	if n, ok := one["total_size_bytes"].(float64); ok {
		res.BigTotal = int(n)
	}
	if s, ok := one["result"].(string); ok {
		res.BigInline = len(s)
	}
	if !res.BigTruncated {
		return nil, fmt.Errorf("60 MiB answer was not truncated: %.300s", resultText(r))
	}
	// Back to idle once the continuation expires (the store's timer
	// removes it; allow for the runtime handing memory back).
	t = time.Now()
	deadline := t.Add(boundsContTTL + 20*time.Second)
	for {
		rss, err := g.RSS()
		if err != nil {
			return nil, err
		}
		res.AfterExpiry = rss
		if float64(rss) <= float64(res.IdleRSS)*targetBackToIdle && time.Since(t) > boundsContTTL || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	res.ExpiryWait = time.Since(t)
	res.After = readRSSParts(g.Pid())
	return res, nil
}

// postBig POSTs an n-byte body to url, with or without a Content-Length,
// and returns the status. The gateway may close the connection before the
// body is all sent: that is a refusal too, reported as 413 when the answer
// arrived, as an error otherwise.
func postBig(ctx context.Context, url string, n int, announced bool) (int, error) {
	var body io.Reader = io.LimitReader(&spaceJSON{}, int64(n))
	if !announced {
		body = struct{ io.Reader }{body} // hides the length: chunked
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		return 0, err
	}
	if announced {
		req.ContentLength = int64(n)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := ownHTTPClient().Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		return resp.StatusCode, fmt.Errorf("status %d, want 413", resp.StatusCode)
	}
	return resp.StatusCode, nil
}

// spaceJSON is an endless body that starts like JSON: '[' then spaces.
type spaceJSON struct{ started bool }

func (s *spaceJSON) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	if !s.started && len(p) > 0 {
		p[0], s.started = '[', true
	}
	return len(p), nil
}

// resetHWM resets the peak RSS (VmHWM) of process pid to its RSS now
// (proc(5), /proc/<pid>/clear_refs).
func resetHWM(pid int) error {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		return fmt.Errorf("reset the peak RSS: %w", err)
	}
	return nil
}

// readStatusBytes reads a "kB" line of /proc/<pid>/status (VmRSS, VmHWM).
func readStatusBytes(pid int, key string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, errors.New("no " + key + " line")
}
