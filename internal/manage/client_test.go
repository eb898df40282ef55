package manage_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/manage"
)

func TestClientInstallFilePrintsDiagnostics(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	c := &manage.Client{URL: h.URL + "/mcp"}
	var out bytes.Buffer
	err := c.InstallFile(context.Background(), []byte(mixedConfig), nil, &out)
	if !errors.Is(err, manage.ErrNotAllInstalled) {
		t.Fatalf("err = %v, want ErrNotAllInstalled", err)
	}
	text := out.String()
	for _, want := range []string{
		"SERVER", "math    installed", "remote  installed", "secret_stored", "mcpServers.remote.headers.Authorization",
		"bad     validation_error  error  widens_hardening", "--privileged", "status: partial",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	mustNotContain(t, "CLI output", text, headerSecret)

	var list manage.ListResult
	if err := c.Call(context.Background(), manage.MethodList, nil, &list); err != nil || len(list.Servers) != 3 {
		t.Fatalf("list: %v %+v", err, list)
	}
	out.Reset()
	manage.PrintList(&out, &list)
	if !strings.Contains(out.String(), "npxsrv  installed") {
		t.Errorf("list table:\n%s", out.String())
	}
	err = c.Call(context.Background(), manage.MethodDetails, map[string]any{"server_id": "ghost"}, nil)
	if err == nil || !strings.Contains(err.Error(), "ghost") || !strings.Contains(err.Error(), "-32602") {
		t.Errorf("details of an unknown server: %v", err)
	}
}

func TestClientSendsTheToken(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Invalid or missing authentication token"}}`))
	}))
	defer srv.Close()
	c := &manage.Client{URL: srv.URL, Token: "tok"}
	err := c.Call(context.Background(), manage.MethodList, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "Invalid or missing authentication token") {
		t.Errorf("err = %v", err)
	}
	if h := <-got; h != "Bearer tok" {
		t.Errorf("Authorization = %q", h)
	}
}
