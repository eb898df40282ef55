// Package labelled reads the labelled set of the tool search: real MCP
// servers' published tools, one file a server (testdata/servers/<id>.txt
// under internal/toolsearch), each line "name | description | param,param",
// with "# source:" naming the repository the tools were taken from and an
// optional "# summary:". The quality test and the gateway's benchmarks read
// it through here, so the format has one reader.
package labelled

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Server is one file of the set.
type Server struct {
	ID, Source, Summary string
	Tools               []Tool
}

// Tool is one line of a server's file.
type Tool struct {
	Name, Description string
	Params            []string
}

// Servers reads every <id>.txt in dir, in name order.
func Servers(dir string) ([]Server, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("labelled set: no server files in %s", dir)
	}
	out := make([]Server, 0, len(files))
	for _, f := range files {
		s, err := read(f)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func read(path string) (Server, error) {
	s := Server{ID: strings.TrimSuffix(filepath.Base(path), ".txt")}
	f, err := os.Open(path)
	if err != nil {
		return s, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "# source:"); ok {
			s.Source = strings.TrimSpace(rest)
			continue
		}
		if rest, ok := strings.CutPrefix(line, "# summary:"); ok {
			s.Summary = strings.TrimSpace(rest)
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, ok := strings.Cut(line, "|")
		cut := strings.LastIndex(rest, "|")
		if !ok || cut < 0 {
			return s, fmt.Errorf("%s:%d: want name | description | params, got %q", path, n, line)
		}
		t := Tool{Name: strings.TrimSpace(name), Description: strings.TrimSpace(rest[:cut])}
		for _, p := range strings.Split(rest[cut+1:], ",") {
			if p = strings.TrimSpace(p); p != "" {
				t.Params = append(t.Params, p)
			}
		}
		s.Tools = append(s.Tools, t)
	}
	if err := sc.Err(); err != nil {
		return s, err
	}
	if s.Source == "" {
		return s, fmt.Errorf("%s: no # source: line naming where the tools come from", path)
	}
	return s, nil
}

// Query is one line of queries.txt: "query | callable, callable", the
// callable names (<server>__<tool>) that answer it.
type Query struct {
	Text   string
	Expect []string
}

// Queries reads the labelled queries at path.
func Queries(path string) ([]Query, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Query
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		text, names, ok := strings.Cut(line, " | ")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want query | names, got %q", path, n, line)
		}
		q := Query{Text: text}
		for _, name := range strings.Split(names, ",") {
			if name = strings.TrimSpace(name); name != "" {
				q.Expect = append(q.Expect, name)
			}
		}
		out = append(out, q)
	}
	return out, sc.Err()
}
