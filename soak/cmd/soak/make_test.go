package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestMakeSoak: `make soak` runs this command with SOAK_DURATION,
// SOAK_FAULT_EVERY and SOAK_FLAGS as docs/reliability.md says, and the
// report names the command as it was typed.
func TestMakeSoak(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	out, err := exec.Command("make", "-s", "-n", "-C", "../../..", "soak",
		"SOAK_DURATION=20m", "SOAK_FAULT_EVERY=2m", "SOAK_FLAGS=-engine-cut 10s -callers 2").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n soak: %v\n%s", err, out)
	}
	for _, want := range []string{
		"go run ./soak/cmd/soak -duration 20m -fault-every 2m -out RELIABILITY.md -engine-cut 10s -callers 2",
		`SOAK_COMMAND="make soak SOAK_DURATION=20m SOAK_FAULT_EVERY=2m SOAK_FLAGS='-engine-cut 10s -callers 2'"`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("make -n soak does not run %q:\n%s", want, out)
		}
	}
}
