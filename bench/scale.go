package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Figure 14: scale (issue 26). A gateway with 1,000 configured providers
// declaring 10 tools each (none started): how long until it serves their
// 10,000 tools, its idle RSS, and its tools/list; and a gateway holding
// 10,000 idle 2025-11-25 sessions: its RSS, and a call's latency beside
// the same call with one session open.

const (
	scaleProviders = 1000
	scaleSessions  = 10000
)

// ScaleResult is figure 14.
type ScaleResult struct {
	Providers, Tools int
	// Ready is from the process's start to a tools/list holding every
	// declared tool.
	Ready time.Duration
	// IdleRSS is read once the gateway is idle (settleRSS); IdleFile is
	// the part of it that is file-backed (RssFile: the binary's code and
	// data the kernel mapped in), the same for any configuration.
	IdleRSS, IdleFile int64
	// ToolList is a plain HTTP tools/list of the 10,000 tools, timed
	// until the answer is read whole; each answer is compared byte for
	// byte with the first, which was decoded and counted. ToolListDecode
	// is what decoding one answer's envelope with encoding/json costs the
	// client on top (it scans every byte), timed apart.
	ToolList, ToolListDecode Summary
	AnswerBytes              int
	// Sessions are the idle 2025-11-25 sessions held open.
	Sessions                 int
	SessionsRSS, OneRSS      int64
	CallOne, CallManyOpen    Summary // math__add on one session, alone and beside Sessions idle ones
	OpenSessionsTook         time.Duration
	SessionsProtocol, Called string
}

// Scale measures figure 14.
func (b *Bench) Scale(ctx context.Context) (*ScaleResult, error) {
	res := &ScaleResult{Providers: scaleProviders, Tools: scaleProviders * listToolsPer}
	if err := b.scaleProviders(ctx, res); err != nil {
		return nil, err
	}
	if err := b.scaleSessions(ctx, res); err != nil {
		return nil, err
	}
	return res, nil
}

func (b *Bench) scaleProviders(ctx context.Context, res *ScaleResult) error {
	began := time.Now()
	g, err := b.StartGateway("scale-providers", toolsListYAML(providerIDs(scaleProviders)))
	if err != nil {
		return err
	}
	defer stopGateway(g, b.log)
	hc := ownHTTPClient()
	var first []byte
	for deadline := time.Now().Add(60 * time.Second); ; {
		data, status, err := postToolsList(ctx, hc, g.MCPURL)
		if err != nil {
			return err
		}
		raw, err := toolsListResult(data, status)
		if err != nil {
			return err
		}
		if n := bytes.Count(raw, []byte(`"name":"p`)); n >= res.Tools {
			res.Ready = time.Since(began)
			first = data
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("1,000 providers: their tools are not all listed after 60 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Idle as in figure 7: once start-up is over and nothing calls.
	if res.IdleRSS, err = settleRSS(g); err != nil {
		return err
	}
	if res.IdleFile, err = g.RSSFile(); err != nil {
		return err
	}
	res.AnswerBytes = len(first)
	list := func(ctx context.Context, _ int) error {
		data, status, err := postToolsList(ctx, hc, g.MCPURL)
		if err == nil && (status != http.StatusOK || !bytes.Equal(data, first)) {
			err = fmt.Errorf("tools/list: HTTP %d, a %d-byte answer that differs from the first (%d bytes)", status, len(data), len(first))
		}
		return err
	}
	if _, _, err := measure(ctx, []callFn{list}, b.n(10, 3)); err != nil {
		return err
	}
	n := b.n(60, 15)
	lat, _, err := measure(ctx, []callFn{list}, n)
	if err != nil {
		return err
	}
	res.ToolList = Summarize(lat)
	decode := func(context.Context, int) error {
		_, err := toolsListResult(first, http.StatusOK)
		return err
	}
	if lat, _, err = measure(ctx, []callFn{decode}, n); err != nil {
		return err
	}
	res.ToolListDecode = Summarize(lat)
	return nil
}

func (b *Bench) scaleSessions(ctx context.Context, res *ScaleResult) error {
	g, err := b.StartGateway("scale-sessions", configYAML([]srvDef{{"math", mathImage}},
		fmt.Sprintf("server:\n  max_sessions: %d\n  max_sessions_per_identity: %d\n", scaleSessions+10, scaleSessions+10)))
	if err != nil {
		return err
	}
	defer stopGateway(g, b.log)
	c, err := DialLegacy(ctx, g.MCPURL)
	if err != nil {
		return err
	}
	defer c.Close()
	res.SessionsProtocol = c.ProtocolVersion()
	if _, err := c.MustCall(ctx, "hangar_warm", map[string]any{"mcp_servers": "math"}); err != nil {
		return err
	}
	res.Called = "math__add"
	call := func(ctx context.Context, _ int) error {
		r, err := c.Call(ctx, "math__add", map[string]any{"a": 1, "b": 2})
		if err == nil && r.IsError {
			err = fmt.Errorf("tool error: %s", resultText(r))
		}
		return err
	}
	// The front door lists the warm provider's tools after its refresh,
	// not before hangar_warm answers (figure 1 waits the same way).
	for deadline := time.Now().Add(10 * time.Second); ; {
		err := call(ctx, 0)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("front door: %s never answered: %w", res.Called, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	n := b.n(1000, 200)
	if _, _, err := measure(ctx, []callFn{call}, n/5); err != nil {
		return err
	}
	lat, _, err := measure(ctx, []callFn{call}, n)
	if err != nil {
		return err
	}
	res.CallOne = Summarize(lat)
	if res.OneRSS, err = g.SettledRSS(3, 200*time.Millisecond); err != nil {
		return err
	}
	opened := time.Now()
	hc := ownHTTPClient()
	hc.Transport.(*http.Transport).MaxIdleConnsPerHost = 16
	for i := range scaleSessions {
		if err := openSession(ctx, hc, g.MCPURL); err != nil {
			return fmt.Errorf("session %d: %w", i, err)
		}
	}
	res.OpenSessionsTook = time.Since(opened)
	res.Sessions = scaleSessions
	if res.SessionsRSS, err = g.SettledRSS(5, 200*time.Millisecond); err != nil {
		return err
	}
	if lat, _, err = measure(ctx, []callFn{call}, n); err != nil {
		return err
	}
	res.CallManyOpen = Summarize(lat)
	return nil
}

// openSession opens one 2025-11-25 session as a client does (initialize,
// then notifications/initialized) and leaves it idle.
func openSession(ctx context.Context, hc *http.Client, url string) error {
	post := func(body, session string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		return hc.Do(req)
	}
	resp, err := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hangar-bench","version":"0"}}}`, "")
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		return fmt.Errorf("initialize: HTTP %d, session %q", resp.StatusCode, id)
	}
	resp, err = post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, id)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("notifications/initialized: HTTP %d", resp.StatusCode)
	}
	return nil
}
