package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestParseCalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args    []string
		want    int
		wantErr string
	}{
		{nil, 0, ""},
		{[]string{"math__add", `{"a": 1, "b": 2}`, "hangar_list", "{}"}, 2, ""},
		{[]string{"math__add"}, 0, "calls come in pairs"},
		{[]string{"math__add", "[1, 2]"}, 0, "arguments of math__add: not a JSON object"},
	} {
		calls, err := parseCalls(tc.args)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseCalls(%q) = %v, want an error with %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil || len(calls) != tc.want {
			t.Errorf("parseCalls(%q) = %d calls, %v; want %d", tc.args, len(calls), err, tc.want)
		}
	}
}

type addArgs struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

// gateway is an MCP server that, like hangar, wants a bearer token.
func gateway(t *testing.T, token string) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "hangar", Version: "test"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "math__add", Description: "Add two numbers"},
		func(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "42"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fails", Description: strings.Repeat("long ", 30)},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no"}}}, nil, nil
		})
	// Stateless: the go-sdk serves 2026-07-28 only so.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "Invalid or missing authentication token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

func TestRun(t *testing.T) {
	url := gateway(t, "tok-1234")
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tok-1234\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HANGAR_TOKEN", "")
	t.Setenv("HANGAR_TOKEN_FILE", tokenFile)
	t.Setenv("HANGAR_URL", url)

	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		var out bytes.Buffer
		if err := run([]string{"--protocol", version, "math__add", `{"a": 20, "b": 22}`}, &out); err != nil {
			t.Fatalf("%s: %v\n%s", version, err, &out)
		}
		for _, want := range []string{"connected to hangar test at " + url + " (protocol " + version + ")",
			"2 tools:\n", "  math__add                    Add two numbers\n", "call math__add {\"a\": 20, \"b\": 22}\n  => 42\n"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: output lacks %q:\n%s", version, want, &out)
			}
		}
		if strings.Contains(out.String(), strings.Repeat("long ", 13)) || !strings.Contains(out.String(), "…") {
			t.Errorf("%s: a long description is not cut:\n%s", version, &out)
		}
	}

	// A tool error is printed and fails the run.
	var out bytes.Buffer
	err := run([]string{"fails", "{}"}, &out)
	if err == nil || !strings.Contains(out.String(), "  tool error: no") {
		t.Errorf("a tool error: %v\n%s", err, &out)
	}
	// $HANGAR_TOKEN wins over the file; a wrong one is refused.
	t.Setenv("HANGAR_TOKEN", "wrong")
	if err := run(nil, &out); err == nil || !strings.Contains(err.Error(), "connect to "+url) {
		t.Errorf("a wrong token: %v", err)
	}
	t.Setenv("HANGAR_TOKEN", "")
	t.Setenv("HANGAR_TOKEN_FILE", "")
	if err := run(nil, &out); err == nil || !strings.Contains(err.Error(), "no token") {
		t.Errorf("no token: %v", err)
	}
}
