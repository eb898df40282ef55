package toolsearch

import (
	"fmt"
	"runtime"
	"slices"
	"sort"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"list_pull_requests", []string{"list", "pull", "requests"}},
		{"github__get_me", []string{"github", "get", "me"}},
		{"getIssueDetails", []string{"get", "issue", "details"}},
		{"atlas-list-db-users", []string{"atlas", "list", "db", "users"}},
		{"HTTPServerStatus", []string{"http", "server", "status"}},
		{"notion.create.page", []string{"notion", "create", "page"}},
		{"s3Bucket2Copy", []string{"s", "3", "bucket", "2", "copy"}},
		{"  ", nil},
	}
	for _, tt := range tests {
		if got := Words(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Words(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func callables(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Callable
	}
	return out
}

func doc(server, tool, desc string, params ...string) Doc {
	return Doc{Callable: server + "__" + tool, Server: server, Tool: tool, Description: desc, Params: params}
}

// TestIndexFollowsCatalog: a published catalog replaces the one before,
// server by server: changed servers are rewritten, removed ones go.
func TestIndexFollowsCatalog(t *testing.T) {
	t.Parallel()
	ix, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ctx := t.Context()
	go ix.Run(ctx)
	search := func(q string, servers ...string) []string {
		t.Helper()
		hits, err := ix.Search(ctx, Query{Text: q, Limit: 10, Servers: servers})
		if err != nil {
			t.Fatal(err)
		}
		got := callables(hits)
		sort.Strings(got)
		return got
	}
	publish := func(c map[string][]Doc) {
		t.Helper()
		if err := ix.WaitApplied(ctx, ix.Publish(c)); err != nil {
			t.Fatal(err)
		}
	}
	publish(map[string][]Doc{
		"fs":  {doc("fs", "read_file", "Read a file"), doc("fs", "write_file", "Write a file")},
		"git": {doc("git", "git_log", "Show the commit log", "repo_path")},
	})
	if got := search("read a file"); !slices.Equal(got, []string{"fs__read_file", "fs__write_file"}) {
		t.Fatalf("first catalog: %q", got)
	}
	if got := search("repo path"); !slices.Equal(got, []string{"git__git_log"}) {
		t.Fatalf("parameter names are not indexed: %q", got)
	}
	publish(map[string][]Doc{
		"fs":   {doc("fs", "read_text_file", "Read a text file")},
		"time": {doc("time", "get_current_time", "Get the time now")},
	})
	if got := search("file"); !slices.Equal(got, []string{"fs__read_text_file"}) {
		t.Errorf("changed server: %q", got)
	}
	if got := search("commit log"); len(got) != 0 {
		t.Errorf("removed server still found: %q", got)
	}
	if got := search("current time"); !slices.Equal(got, []string{"time__get_current_time"}) {
		t.Errorf("added server: %q", got)
	}
	if got := search("read file time", "time"); !slices.Equal(got, []string{"time__get_current_time"}) {
		t.Errorf("servers filter: %q", got)
	}
	if got := search("the of a"); len(got) != 0 {
		t.Errorf("stopwords only: %q", got)
	}
}

// TestSearchAllow: Allow drops hits in rank order and Limit counts only
// the hits kept.
func TestSearchAllow(t *testing.T) {
	t.Parallel()
	ix, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	go ix.Run(t.Context())
	docs := map[string][]Doc{}
	for i := range 6 {
		s := fmt.Sprintf("s%d", i)
		docs[s] = []Doc{doc(s, "list_files", "List files")}
	}
	if err := ix.WaitApplied(t.Context(), ix.Publish(docs)); err != nil {
		t.Fatal(err)
	}
	hits, err := ix.Search(t.Context(), Query{Text: "list files", Limit: 2, Allow: func(callable, server string) bool {
		return server != "s0" && server != "s1"
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := callables(hits); !slices.Equal(got, []string{"s2__list_files", "s3__list_files"}) {
		t.Errorf("got %q", got)
	}
}

// synthetic is a catalog of n tools: the labelled set, repeated under
// other server names until it has n.
func synthetic(t testing.TB, n int) map[string][]Doc {
	base, _ := loadCatalog(t)
	out := map[string][]Doc{}
	count := 0
	for copyN := 0; count < n; copyN++ {
		for server, docs := range base {
			name := fmt.Sprintf("%s-%d", server, copyN)
			for _, d := range docs {
				d.Server, d.Callable = name, name+"__"+d.Tool
				out[name] = append(out[name], d)
				count++
			}
		}
	}
	return out
}

// TestCatchUp: a change of one server's catalog is searchable within
// 100 ms of its publication, with 1,200 tools indexed.
func TestCatchUp(t *testing.T) {
	t.Parallel()
	ix, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ctx := t.Context()
	go ix.Run(ctx)
	catalog := synthetic(t, 1200)
	if err := ix.WaitApplied(ctx, ix.Publish(catalog)); err != nil {
		t.Fatal(err)
	}
	next := map[string][]Doc{}
	for k, v := range catalog {
		next[k] = v
	}
	next["fresh"] = []Doc{doc("fresh", "quux_frobnicate", "Frobnicate the quux")}
	began := time.Now()
	if err := ix.WaitApplied(ctx, ix.Publish(next)); err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	hits, err := ix.Search(ctx, Query{Text: "frobnicate quux", Limit: 1})
	if err != nil || len(hits) != 1 || hits[0].Callable != "fresh__quux_frobnicate" {
		t.Fatalf("new tool not found: %v %v", hits, err)
	}
	t.Logf("catch-up of one changed server among %d tools: %v", 1200, took)
	if took > raceSlowdown*100*time.Millisecond {
		t.Errorf("catch-up took %v, want at most %v", took, raceSlowdown*100*time.Millisecond)
	}
}

// BenchmarkSearch is one labelled query over 1,228 tools, index only.
func BenchmarkSearch(b *testing.B) {
	ix, err := New()
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	ctx := b.Context()
	go ix.Run(ctx)
	catalog, _ := loadCatalog(b)
	if err := ix.WaitApplied(ctx, ix.Publish(synthetic(b, 1228))); err != nil {
		b.Fatal(err)
	}
	queries := loadQueries(b, catalog)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu []time.Duration
	b.ResetTimer()
	i := 0
	for b.Loop() {
		began := threadCPU()
		if _, err := ix.Search(ctx, Query{Text: queries[i%len(queries)].Text, Limit: 10}); err != nil {
			b.Fatal(err)
		}
		cpu = append(cpu, threadCPU()-began)
		i++
	}
	b.StopTimer()
	slices.Sort(cpu)
	b.ReportMetric(float64(cpu[len(cpu)/2].Microseconds()), "cpu-p50-µs")
	b.ReportMetric(float64(cpu[len(cpu)*99/100].Microseconds()), "cpu-p99-µs")
}

// threadCPU is the CPU time of the calling thread, to the nanosecond
// (getrusage counts in scheduler ticks).
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
