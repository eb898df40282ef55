package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// load is the clients' traffic: per client kind, a caller that calls the
// echo server through hangar_call without pause, and a writer that
// installs, uninstalls, approves and hot-loads in turn; every call goes
// through the balancer.
type load struct {
	o       Options
	url     string // the balancer's /mcp
	token   string
	led     *ledger
	st      *stack
	wg      sync.WaitGroup
	seq     sync.Mutex
	counter int
}

func (ld *load) next() int {
	ld.seq.Lock()
	defer ld.seq.Unlock()
	ld.counter++
	return ld.counter
}

// start runs the workers until ctx ends.
func (ld *load) start(ctx context.Context) {
	for _, k := range clientKinds {
		for range ld.o.CallersPerKind {
			ld.wg.Add(1)
			go func() { defer ld.wg.Done(); ld.caller(ctx, k) }()
		}
		ld.wg.Add(1)
		go func() { defer ld.wg.Done(); ld.writer(ctx, k) }()
	}
}

func (ld *load) wait() { ld.wg.Wait() }

// worker holds one session of kind k, dialled again after a call that
// got no answer (the session may be gone with its replica).
type worker struct {
	ld   *load
	kind clientKind
	s    mcpSession
}

func (w *worker) session(ctx context.Context) (mcpSession, bool) {
	if w.s != nil {
		return w.s, true
	}
	began := time.Now()
	dctx, cancel := context.WithTimeout(ctx, w.ld.o.HungAfter)
	s, err := dial(dctx, w.kind, w.ld.url, w.ld.token)
	cancel()
	if ctx.Err() != nil {
		if s != nil {
			s.Close()
		}
		return nil, false
	}
	outcome, kind := classify(dctx, err, w.ld.o.HungAfter, began)
	w.ld.led.add(event{kind: w.kind, op: "connect", start: began, end: time.Now(), outcome: outcome, errKind: kind})
	if err != nil {
		sleep(ctx, 250*time.Millisecond)
		return nil, false
	}
	w.s = s
	return s, true
}

func (w *worker) drop() {
	if w.s != nil {
		w.s.Close()
		w.s = nil
	}
}

// call calls tool and records the event under op; a transport failure
// drops the session. It returns the text of an answer that was not a
// tool error.
func (w *worker) call(ctx context.Context, op, tool string, args map[string]any) (string, bool) {
	s, ok := w.session(ctx)
	if !ok {
		return "", false
	}
	began := time.Now()
	cctx, cancel := context.WithTimeout(ctx, w.ld.o.HungAfter)
	text, isErr, err := s.Call(cctx, tool, args)
	cancel()
	if ctx.Err() != nil { // the run ended: not a failure of the gateway
		return "", false
	}
	outcome, kind := classify(cctx, err, w.ld.o.HungAfter, began)
	detail := text
	if err != nil {
		detail = err.Error()
	}
	if err == nil && isErr {
		outcome, kind = outcomeFailed, errorKind(text)
	}
	if err == nil && !isErr && tool == "hangar_call" {
		if _, k, et := callResultText(text); k != "" {
			outcome, kind, detail = outcomeFailed, k, et
		}
	}
	w.ld.led.add(event{kind: w.kind, op: op, start: began, end: time.Now(), outcome: outcome, errKind: kind, detail: detail})
	if err != nil {
		w.drop()
	}
	return text, outcome == outcomeOK
}

// The echo server's tools by their front-door (callable) names.
const (
	frontDoorEcho     = "echo__echo"
	frontDoorProgress = "echo__progress"
)

// caller calls the echo server's echo tool in turn through hangar_call and
// by its front-door name.
func (ld *load) caller(ctx context.Context, k clientKind) {
	w := &worker{ld: ld, kind: k}
	defer w.drop()
	for i := 0; ctx.Err() == nil; i++ {
		msg := fmt.Sprintf("%s-%d", k, ld.next())
		if i%2 == 0 {
			text, ok := w.call(ctx, "call", "hangar_call", hangarCall("echo", "echo", map[string]any{"text": msg}))
			if r, _ := callResult(text); ok && r != msg {
				ld.led.add(event{kind: k, op: "call", start: time.Now(), end: time.Now(), outcome: outcomeFailed, errKind: "wrong_answer", detail: text})
			}
		} else {
			// The same tool by its front-door name.
			text, ok := w.call(ctx, "frontdoor", frontDoorEcho, map[string]any{"text": msg})
			if ok && text != msg {
				ld.led.add(event{kind: k, op: "frontdoor", start: time.Now(), end: time.Now(), outcome: outcomeFailed, errKind: "wrong_answer", detail: text})
			}
		}
		sleep(ctx, ld.o.CallPause)
	}
}

// writer cycles through the writes the report checks against the store.
func (ld *load) writer(ctx context.Context, k clientKind) {
	w := &worker{ld: ld, kind: k}
	defer w.drop()
	var installed []string
	for i := 0; ctx.Err() == nil; i++ {
		switch i % 3 {
		case 0:
			name := fmt.Sprintf("inst-%s-%d", k, ld.next())
			if ld.install(ctx, k, name) {
				installed = append(installed, name)
			}
			// Keep the catalog small: the oldest installs go.
			if len(installed) > 5 {
				if ld.uninstall(ctx, k, installed[0]) {
					installed = installed[1:]
				}
			}
		case 1:
			ld.approve(ctx, w, fmt.Sprintf("appr-%s-%d", k, ld.next()))
		case 2:
			ld.hotload(ctx, w, k)
		}
		sleep(ctx, ld.o.WritePause)
	}
}

// mgmt sends one seed-003 management request (outside sessions) and
// returns its result.
func (ld *load) mgmt(ctx context.Context, k clientKind, op, method string, params any) (map[string]any, bool) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	began := time.Now()
	cctx, cancel := context.WithTimeout(ctx, ld.o.HungAfter)
	defer cancel()
	req, _ := http.NewRequestWithContext(cctx, http.MethodPost, ld.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+ld.token)
	var res map[string]any
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		raw, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		var env struct {
			Result map[string]any `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		switch {
		case rerr != nil:
			err = rerr
		case resp.StatusCode != http.StatusOK:
			err = fmt.Errorf("status %d: %s", resp.StatusCode, firstWords(string(raw), 12))
		case json.Unmarshal(raw, &env) != nil:
			err = fmt.Errorf("bad answer: %s", firstWords(string(raw), 12))
		case env.Error != nil:
			err = fmt.Errorf("rpc error %d: %s", env.Error.Code, env.Error.Message)
		default:
			res = env.Result
		}
	}
	if ctx.Err() != nil {
		return nil, false
	}
	outcome, kind := classify(cctx, err, ld.o.HungAfter, began)
	detail := ""
	if err != nil {
		detail = err.Error()
	}
	if strings.HasPrefix(kind, "other(rpc error") {
		kind = "rpc_error(" + firstWords(err.Error(), 6) + ")"
	}
	ld.led.add(event{kind: k, op: op, start: began, end: time.Now(), outcome: outcome, errKind: kind, detail: detail})
	return res, err == nil
}

func (ld *load) install(ctx context.Context, k clientKind, name string) bool {
	cfg := fmt.Sprintf(`{"mcpServers": {%q: {"command": "docker", "args": ["run", "-i", "--rm", %q]}}}`, name, ld.o.ProviderImage)
	res, ok := ld.mgmt(ctx, k, "install", "mcp/install", map[string]any{"config_json": cfg})
	if !ok || res["status"] != "ok" {
		return false
	}
	ld.led.ack(func(l *ledger) { l.installs[name] = time.Now() })
	return true
}

func (ld *load) uninstall(ctx context.Context, k clientKind, name string) bool {
	res, ok := ld.mgmt(ctx, k, "uninstall", "mcp/uninstall", map[string]any{"name": name})
	if !ok || res["removed"] != true {
		ld.led.ack(func(l *ledger) { l.uninstallSent[name] = time.Now() })
		return false
	}
	ld.led.ack(func(l *ledger) { l.uninstalled[name] = time.Now() })
	return true
}

// approve makes a server for the filesystem discovery source to find,
// approves it once a replica shows it pending, and removes its file.
func (ld *load) approve(ctx context.Context, w *worker, name string) {
	file := filepath.Join(ld.st.discover, name+".yaml")
	if err := os.WriteFile(file, []byte("mode: docker\nimage: "+ld.o.ProviderImage+"\n"), 0o644); err != nil {
		return
	}
	defer os.Remove(file)
	// Discovery is a scan every few seconds on each replica, and the
	// balancer may send the approval to the replica that has not scanned
	// yet: an approval refused as not pending is tried again (the attempts
	// are one call of the report, its outcome the last attempt's).
	deadline := time.Now().Add(30 * time.Second)
	var began time.Time
	lastKind := "never_pending"
	for ctx.Err() == nil && time.Now().Before(deadline) {
		text, ok := w.call(ctx, "pending", "hangar_discovered", nil)
		if !ok || !strings.Contains(text, `"`+name+`"`) {
			sleep(ctx, time.Second)
			continue
		}
		s, ok := w.session(ctx)
		if !ok {
			continue
		}
		if began.IsZero() {
			began = time.Now()
		}
		cctx, cancel := context.WithTimeout(ctx, ld.o.HungAfter)
		at := time.Now()
		text, isErr, err := s.Call(cctx, "hangar_approve", map[string]any{"mcp_server": name})
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			outcome, kind := classify(cctx, err, ld.o.HungAfter, at)
			ld.led.add(event{kind: w.kind, op: "approve", start: at, end: time.Now(), outcome: outcome, errKind: kind})
			w.drop()
			return
		}
		var ans struct {
			Approved bool   `json:"approved"`
			Error    string `json:"error"`
		}
		if !isErr && json.Unmarshal([]byte(text), &ans) == nil && ans.Approved {
			ld.led.add(event{kind: w.kind, op: "approve", start: began, end: time.Now(), outcome: outcomeOK})
			ld.led.ack(func(l *ledger) { l.approvals[name] = time.Now() })
			return
		}
		lastKind = errorKind(firstWords(text+" "+ans.Error, 12))
		sleep(ctx, time.Second)
	}
	if ctx.Err() == nil {
		if began.IsZero() {
			began = deadline.Add(-30 * time.Second)
		}
		ld.led.add(event{kind: w.kind, op: "approve", start: began, end: time.Now(), outcome: outcomeFailed, errKind: lastKind})
	}
}

// hotload loads the kind's catalog entry, calls it once and unloads it.
func (ld *load) hotload(ctx context.Context, w *worker, k clientKind) {
	text, ok := w.call(ctx, "hotload", "hangar_load", map[string]any{"name": hotloadName(k)})
	if !ok {
		return
	}
	var ans struct {
		Status string `json:"status"`
		Server string `json:"mcp_server"`
	}
	if json.Unmarshal([]byte(text), &ans) != nil || ans.Status != "loaded" || ans.Server == "" {
		ld.led.add(event{kind: k, op: "hotload", start: time.Now(), end: time.Now(), outcome: outcomeFailed, errKind: "not_loaded", detail: text})
		return
	}
	ld.led.ack(func(l *ledger) { l.hotLoads++ })
	if _, ok := w.call(ctx, "hotload_call", "hangar_call", hangarCall(ans.Server, "echo", map[string]any{"text": "hot"})); ok {
		ld.led.ack(func(l *ledger) { l.hotCalls[ans.Server]++ })
	}
	w.call(ctx, "unload", "hangar_unload", map[string]any{"mcp_server": ans.Server})
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
