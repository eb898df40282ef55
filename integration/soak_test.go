package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcp-hangar/hangar/soak"
)

// TestSoakShort is `make soak` in under three minutes: two replicas on
// PostgreSQL behind a round-robin balancer, clients of both SDKs on both
// protocol versions calling, installing, approving and hot-loading, and
// each fault once (a replica SIGKILLed, PostgreSQL restarted, the
// engine's socket cut, a crash-looping provider, a hanging one, clients
// dropping their streams). It fails on any problem the harness finds: an
// acknowledged write missing from the store, a leak, a hung call, a fault
// not recovered from. The report is kept in the test's output directory
// (and logged on failure).
//
// Not parallel: it kills a replica and cuts the engine on a timetable.
func TestSoakShort(t *testing.T) {
	if _, err := docker.ImageInspect(t.Context(), "mcp-hangar/postgres:dev"); err != nil {
		// make images skips it where PostgreSQL is not installed.
		t.Fatalf("mcp-hangar/postgres:dev: %v (make image-postgres; it needs PostgreSQL's Debian packages)", err)
	}
	o := soak.Options{
		Duration:       140 * time.Second,
		FaultEvery:     20 * time.Second,
		EngineCut:      10 * time.Second,
		ProviderFault:  8 * time.Second,
		HungAfter:      30 * time.Second,
		SessionIdleTTL: 10 * time.Second,
		WritePause:     time.Second,
		Command:        "go test ./integration -run TestSoakShort",
		Log:            t.Logf,
	}
	// A gateway image of one's own (built from a tree under test while
	// :dev is another's): SOAK_GATEWAY_IMAGE.
	o.GatewayImage = os.Getenv("SOAK_GATEWAY_IMAGE")
	rep, err := soak.Run(t.Context(), o)
	if rep == nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	rep.WriteMarkdown(&md, soak.Machine(), soak.Commit())
	out := filepath.Join(t.TempDir(), "RELIABILITY.md")
	if dir := os.Getenv("SOAK_REPORT_DIR"); dir != "" {
		out = filepath.Join(dir, "RELIABILITY-short.md")
	}
	_ = os.WriteFile(out, md.Bytes(), 0o644)
	if err != nil || len(rep.Problems) > 0 {
		t.Errorf("soak run: %v\n%s", err, md.String())
		for _, p := range rep.Problems {
			t.Errorf("problem: %s", p)
		}
	}
}
