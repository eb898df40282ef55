package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoMethodKeptForReflection: nothing the binary links reaches
// reflect.Value.MethodByName or Method (running a text/template or an
// html/template does). Once one is reachable the linker must keep every
// exported method of every type the program puts in an interface, in case
// it is called by name: 6.4 MB of hangar (docs/performance.md). Pages are
// written with internal/markup instead.
func TestNoMethodKeptForReflection(t *testing.T) {
	t.Parallel()
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), gotool, "build", "-ldflags=-dumpdep", "-o", filepath.Join(t.TempDir(), "hangar"), ".")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build -ldflags=-dumpdep: %v\n%.4000s", err, out)
	}
	var marked []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.Contains(line, "<ReflectMethod>") {
			marked = append(marked, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(marked) > 0 {
		if len(marked) > 30 {
			marked = marked[:30]
		}
		t.Errorf("the binary reaches a method called by reflection (go build -ldflags=-dumpdep ./cmd/hangar 2>&1 | grep ReflectMethod):\n%s", strings.Join(marked, "\n"))
	}
	if !bytes.Contains(out, []byte("main.main")) {
		t.Errorf("no dependency graph in go build -ldflags=-dumpdep's output:\n%.2000s", out)
	}
}
