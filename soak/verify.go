package soak

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// sample is one replica's process figures, read from its /metrics.
type sample struct {
	At         time.Time
	Goroutines float64
	FDs        float64
	RSS        float64 // bytes
	Sessions   float64
	Started    float64 // process_start_time_seconds
	Err        error
}

var sampleSeries = map[string]func(*sample) *float64{
	"go_goroutines":                 func(s *sample) *float64 { return &s.Goroutines },
	"process_open_fds":              func(s *sample) *float64 { return &s.FDs },
	"process_resident_memory_bytes": func(s *sample) *float64 { return &s.RSS },
	"hangar_sessions_open":          func(s *sample) *float64 { return &s.Sessions },
	"process_start_time_seconds":    func(s *sample) *float64 { return &s.Started },
}

func readSample(ctx context.Context, url, token string) sample {
	s := sample{At: time.Now(), Sessions: -1}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.Err = err
		return s
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.Err = fmt.Errorf("/metrics: status %d", resp.StatusCode)
		return s
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if f := sampleSeries[name]; ok && f != nil {
			if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
				*f(&s) = v
			}
		}
	}
	return s
}

// storeCheck is what the store holds of the acknowledged writes.
type storeCheck struct {
	Installs, InstallsFound    int // acknowledged, not uninstalled since
	Uninstalls, UninstallsGone int
	// UninstalledUnanswered: installs whose uninstall got no answer,
	// found removed, with the uninstall's audit entry.
	UninstalledUnanswered     int
	Approvals, ApprovalsFound int
	AuditExpected, AuditFound int
	HotCalls, HotCallsAudited int
	HotLoads                  int
	Lost                      []string
	Err                       error
}

// checkStore reads the store after the run: every acknowledged install is
// there (or gone, when its uninstall was acknowledged), every acknowledged
// approval, and the audit entry of each (mcp/install, mcp/uninstall,
// hangar_approve, each hangar_call of a hot-loaded server).
func checkStore(ctx context.Context, pgURL string, led *ledger) storeCheck {
	var c storeCheck
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		c.Err = err
		return c
	}
	defer conn.Close(context.WithoutCancel(ctx))
	set := func(q string) (map[string]bool, error) {
		rows, err := conn.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		out := map[string]bool{}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				return nil, err
			}
			out[s] = true
		}
		return out, rows.Err()
	}
	installs, err := set(`SELECT name FROM installs`)
	if err != nil {
		c.Err = err
		return c
	}
	approved, err := set(`SELECT key FROM decisions WHERE kind = 'approved'`)
	if err != nil {
		c.Err = err
		return c
	}
	audit := map[string]int{} // action|tool|server → entries
	rows, err := conn.Query(ctx, `SELECT action, tool, server, count(*) FROM audit GROUP BY action, tool, server`)
	if err != nil {
		c.Err = err
		return c
	}
	for rows.Next() {
		var action, tool, server string
		var n int
		if err := rows.Scan(&action, &tool, &server, &n); err != nil {
			c.Err = err
			return c
		}
		audit[action+"|"+tool+"|"+server] += n
	}
	if c.Err = rows.Err(); c.Err != nil {
		return c
	}
	led.mu.Lock()
	defer led.mu.Unlock()
	lost := func(f string, a ...any) { c.Lost = append(c.Lost, fmt.Sprintf(f, a...)) }
	auditHas := func(key string, n int, what string) {
		c.AuditExpected += n
		got := min(audit[key], n)
		c.AuditFound += got
		if got < n {
			lost("audit of %s: %d of %d acknowledged entries stored", what, got, n)
		}
	}
	for _, name := range sortedKeys(led.installs) {
		auditHas("mcp/install||"+name, 1, "mcp/install "+name)
		if _, gone := led.uninstalled[name]; gone {
			continue
		}
		if _, sent := led.uninstallSent[name]; sent && !installs[name] && audit["mcp/uninstall||"+name] > 0 {
			// Its uninstall was made, and audited, but the answer did
			// not come back (the load stopped under it, a replica died).
			c.UninstalledUnanswered++
			continue
		}
		c.Installs++
		if installs[name] {
			c.InstallsFound++
		} else {
			lost("install %s: acknowledged, not in the store", name)
		}
	}
	for _, name := range sortedKeys(led.uninstalled) {
		c.Uninstalls++
		auditHas("mcp/uninstall||"+name, 1, "mcp/uninstall "+name)
		if !installs[name] {
			c.UninstallsGone++
		} else {
			lost("uninstall %s: acknowledged, but the install is still in the store", name)
		}
	}
	for _, name := range sortedKeys(led.approvals) {
		c.Approvals++
		if approved[name] {
			c.ApprovalsFound++
		} else {
			lost("approval of %s: acknowledged, not in the store", name)
		}
		auditHas("tools/call|hangar_approve|"+name, 1, "hangar_approve "+name)
	}
	c.HotLoads = led.hotLoads
	for _, server := range sortedKeys(led.hotCalls) {
		n := led.hotCalls[server]
		c.HotCalls += n
		before := c.AuditFound
		auditHas("hangar_call|echo|"+server, n, "hangar_call echo on hot-loaded "+server)
		c.HotCallsAudited += c.AuditFound - before
	}
	return c
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// waitPG waits until PostgreSQL accepts a connection and a query.
func waitPG(ctx context.Context, url string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		conn, err := pgx.Connect(cctx, url)
		if err == nil {
			_, err = conn.Exec(cctx, "SELECT 1")
			conn.Close(cctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("PostgreSQL not up within %s: %w", within, err)
		}
		sleep(ctx, 250*time.Millisecond)
	}
}
