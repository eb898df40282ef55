package endpoint

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestReadiness: /healthz answers at once; /readyz answers 503 naming what
// is loading until Ready, then 200, and 503 again while draining; a
// tools/list or tools/call sent before Ready waits for it, while
// initialize, ping and notifications do not.
func TestReadiness(t *testing.T) {
	t.Parallel()
	ready := NewReadiness()
	served := make(chan string, 10)
	e := New(Options{Ready: ready}, Parts{Table: Table{Last: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		env, _ := RequestEnvelope(r.Context())
		served <- env.Method
		_, _ = io.WriteString(w, "{}")
	})}})
	srv := httptest.NewServer(e.Handler)
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	post := func(body string) {
		resp, err := http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
	}

	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz = %d before ready, want 200", code)
	}
	ready.Loading("the tool index")
	if code, body := get("/readyz"); code != 503 || body != "loading: the tool index\n" {
		t.Errorf("/readyz before ready = %d %q", code, body)
	}
	for _, m := range []string{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`, `{"jsonrpc":"2.0","method":"notifications/initialized"}`} {
		post(m)
	}
	for range 3 {
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Fatal("initialize, ping or a notification waited for readiness")
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		post(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
		post(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"hangar_find_tools","arguments":{"query":"x"}}}`)
	}()
	// The request is in (the server holds it) but not served.
	select {
	case m := <-served:
		t.Fatalf("%s served before ready", m)
	case <-time.After(200 * time.Millisecond):
	}
	ready.Ready()
	for _, want := range []string{"tools/list", "tools/call"} {
		select {
		case m := <-served:
			if m != want {
				t.Errorf("served %s, want %s", m, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s still waits after Ready", want)
		}
	}
	<-done
	if code, body := get("/readyz"); code != 200 || body != "ready\n" {
		t.Errorf("/readyz after ready = %d %q", code, body)
	}
	ready.Drain()
	if code, body := get("/readyz"); code != 503 || body != "draining\n" {
		t.Errorf("/readyz while draining = %d %q", code, body)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz = %d while draining, want 200", code)
	}
}

// TestReadyWaitBounded: a start-up that never finishes does not hold a
// request past its own context.
func TestReadyWaitBounded(t *testing.T) {
	t.Parallel()
	r := NewReadiness()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if r.Wait(ctx) {
		t.Error("Wait reported ready")
	}
}
