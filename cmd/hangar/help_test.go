package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-hangar/hangar/internal/config"
)

// runHangar runs hangar with args in-process: exit code, stdout, stderr.
func runHangar(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(slices.Clone(args), &out, &errb)
	return code, out.String(), errb.String()
}

// commandWord is a word of a command in a usage line (servers, list), not
// a flag, placeholder or option.
var commandWord = regexp.MustCompile(`^[a-z][a-z-]*$`)

// usedCommands are the commands a help text's usage lines name, each as
// its words after "hangar": [config check], [servers list], [serve].
func usedCommands(help string) [][]string {
	var out [][]string
	for _, line := range strings.Split(help, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(strings.TrimPrefix(line, "usage:")), "hangar ")
		if !ok || !(strings.HasPrefix(line, "usage: ") || strings.HasPrefix(line, "       hangar ")) {
			continue
		}
		var words []string
		for _, w := range strings.Fields(rest) {
			if !commandWord.MatchString(w) {
				break
			}
			words = append(words, w)
		}
		if len(words) > 0 && !slices.ContainsFunc(out, func(c []string) bool { return slices.Equal(c, words) }) {
			out = append(out, words)
		}
	}
	return out
}

// allCommands are every command and subcommand hangar --help leads to:
// the commands it lists, and those their own help names.
func allCommands(t *testing.T) [][]string {
	t.Helper()
	code, top, _ := runHangar("--help")
	if code != 0 {
		t.Fatalf("hangar --help exits %d", code)
	}
	var out [][]string
	for _, c := range commands {
		if !strings.Contains(top, "  "+c.name+" ") {
			t.Errorf("hangar --help does not list %s", c.name)
		}
		out = append(out, []string{c.name})
		_, help, _ := runHangar(c.name, "--help")
		for _, used := range usedCommands(help) {
			if !slices.ContainsFunc(out, func(c []string) bool { return slices.Equal(c, used) }) {
				out = append(out, used)
			}
		}
	}
	return out
}

// TestHelpFitsAScreen: hangar --help and the help of every command and
// subcommand exit 0, print to stdout, start with how the command is
// used, and fit a terminal of helpLines lines of helpWidth columns.
func TestHelpFitsAScreen(t *testing.T) {
	t.Parallel()
	check := func(name, out, stderr string, code int) {
		t.Helper()
		if code != 0 || stderr != "" || out == "" {
			t.Errorf("%s: exit %d, stderr %q, stdout %d bytes", name, code, stderr, len(out))
			return
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) > helpLines {
			t.Errorf("%s: %d lines, at most %d fit a screen:\n%s", name, len(lines), helpLines, out)
		}
		for _, l := range lines {
			if n := utf8.RuneCountInString(l); n > helpWidth {
				t.Errorf("%s: a line of %d columns, at most %d:\n%s", name, n, helpWidth, l)
			}
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		code, out, errb := runHangar(args...)
		check("hangar "+args[0], out, errb, code)
	}
	for _, cmd := range allCommands(t) {
		for _, flag := range []string{"--help", "-h"} {
			args := append(slices.Clone(cmd), flag)
			name := "hangar " + strings.Join(args, " ")
			code, out, errb := runHangar(args...)
			check(name, out, errb, code)
			if want := "hangar " + strings.Join(cmd, " "); !strings.Contains(out, "usage: "+want) && !strings.Contains(out, "       "+want) {
				t.Errorf("%s does not show %q:\n%s", name, want, out)
			}
		}
	}
}

// TestCommandsAreDocumented: every command and subcommand the help names
// is in README.md or a page of docs/: "hangar servers" on a line that
// also names install, for hangar servers install.
func TestCommandsAreDocumented(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range append(files, filepath.Join(root, "README.md")) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(string(b), "\n")...)
	}
	for _, cmd := range allCommands(t) {
		head := regexp.MustCompile(`hangar ` + regexp.QuoteMeta(cmd[0]) + `($|[^a-z-])`)
		sub := regexp.MustCompile(`(^|[^a-z-])` + regexp.QuoteMeta(strings.Join(cmd[1:], " ")) + `($|[^a-z-])`)
		found := slices.ContainsFunc(lines, func(l string) bool {
			at := head.FindStringIndex(l)
			return at != nil && (len(cmd) == 1 || sub.MatchString(l[at[1]:]))
		})
		if !found {
			t.Errorf("hangar %s is in hangar's help but not in README.md or docs/*.md", strings.Join(cmd, " "))
		}
	}
}

// TestConfigSchemaCommand: hangar config schema prints the config's JSON
// Schema, and --markdown the reference docs/configuration.md holds.
func TestConfigSchemaCommand(t *testing.T) {
	t.Parallel()
	code, out, errb := runHangar("config", "schema")
	want, err := config.JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 || errb != "" || out != string(want) {
		t.Errorf("hangar config schema: exit %d, stderr %q; stdout is the schema: %v", code, errb, out == string(want))
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc["$schema"] != config.SchemaDialect {
		t.Errorf("hangar config schema does not print a %s schema (%v)", config.SchemaDialect, err)
	}
	code, out, _ = runHangar("config", "schema", "--markdown")
	ref, err := config.Reference()
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 || out != ref {
		t.Errorf("hangar config schema --markdown: exit %d; stdout is the reference: %v", code, out == ref)
	}
	if code, _, errb := runHangar("config", "schema", "extra"); code != 1 || !strings.Contains(errb, "usage: hangar config schema") {
		t.Errorf("hangar config schema extra: exit %d, stderr %q; want 1 and the usage", code, errb)
	}
	if code, _, errb := runHangar("config", "schemas"); code != 1 || !strings.Contains(errb, `unknown command hangar config schemas`) {
		t.Errorf("hangar config schemas: exit %d, stderr %q", code, errb)
	}
}
