package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// protocolMode selects which MCP handshake the server pretends to know.
// mcp-go serves both eras at once, so the legacy and modern modes are
// produced by intercepting messages before they reach it.
type protocolMode string

const (
	// protocolAuto leaves mcp-go alone: initialize and server/discover both work.
	protocolAuto protocolMode = "auto"
	// protocolLegacy imitates a server written before server/discover
	// existed that drops unknown requests without a word, so clients must
	// rely on a timeout before falling back to initialize.
	protocolLegacy protocolMode = "legacy"
	// protocolModern imitates a server that implements only protocol
	// 2026-07-28 and so rejects initialize as an unknown method.
	protocolModern protocolMode = "modern"
)

func parseProtocolMode(s string) (protocolMode, error) {
	switch m := protocolMode(s); m {
	case protocolAuto, protocolLegacy, protocolModern:
		return m, nil
	}
	return "", fmt.Errorf("unknown protocol %q: want auto, legacy or modern", s)
}

// advertised lists the protocol versions server/discover should report, or
// nil for mcp-go's default of every version it knows. A modern-only server
// must not offer the versions it pretends not to have.
func (m protocolMode) advertised() []string {
	if m == protocolModern {
		return []string{mcp.ProtocolVersion20260728}
	}
	return nil
}

// verdict is what happens to one inbound message.
type verdict int

const (
	forward verdict = iota // hand it to mcp-go
	ignore                 // behave as if it never arrived
	refuse                 // answer it with method-not-found
)

// inbound is the part of a JSON-RPC message the interceptors look at. ID is
// kept raw so a refusal echoes it byte for byte, whatever its type.
type inbound struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// classify decides the fate of one raw JSON-RPC message. Anything it cannot
// parse, batches included, goes to mcp-go, which reports errors properly.
func (m protocolMode) classify(raw []byte) (verdict, inbound) {
	var msg inbound
	if m == protocolAuto || json.Unmarshal(raw, &msg) != nil {
		return forward, msg
	}
	isRequest := len(msg.ID) > 0 && !bytes.Equal(msg.ID, []byte("null"))
	switch {
	case m == protocolLegacy && msg.Method == string(mcp.MethodServerDiscover):
		return ignore, msg
	case m == protocolModern && isRequest && msg.Method == string(mcp.MethodInitialize):
		return refuse, msg
	}
	return forward, msg
}

// methodNotFound is the JSON-RPC error a server that never heard of the
// method would send. mcp-go's request-initialization hook cannot be used for
// this because it always answers with -32600 (invalid request).
func methodNotFound(msg inbound) []byte {
	resp := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: mcp.JSONRPC_VERSION, ID: msg.ID}
	resp.Error.Code = mcp.METHOD_NOT_FOUND
	resp.Error.Message = fmt.Sprintf("%q %v", msg.Method, server.ErrRemovedInProtocolVersion)
	out, _ := json.Marshal(resp) // cannot fail: the ID is valid JSON taken from a parsed message
	return out
}

// lineWriter serialises writes so that refusals written by the stdin filter
// never interleave with mcp-go's responses. mcp-go writes each message with a
// single Write call, so a lock per Write is enough to keep lines whole.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (lw *lineWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.w.Write(p)
}

// filterStdio copies newline-delimited messages from in to the mcp-go stdio
// server on dst, applying mode. Refusals are written straight to out. It
// closes dst when in ends so that the server sees the same EOF.
func filterStdio(mode protocolMode, in io.Reader, dst *io.PipeWriter, out io.Writer, logger *slog.Logger) {
	r := bufio.NewReader(in)
	for {
		line, readErr := r.ReadBytes('\n')
		// Even blank lines are passed on, so mcp-go reports them exactly as
		// it does without the filter.
		if len(line) > 0 {
			v, msg := mode.classify(line)
			var err error
			switch v {
			case ignore:
				logger.Info("ignoring request", "protocol", mode, "method", msg.Method, "id", string(msg.ID))
			case refuse:
				logger.Info("refusing request", "protocol", mode, "method", msg.Method, "id", string(msg.ID))
				_, err = out.Write(append(methodNotFound(msg), '\n'))
			default:
				_, err = dst.Write(line)
			}
			if err != nil {
				// The server has stopped reading or stdout is gone; nobody
				// is left to talk to.
				dst.CloseWithError(err)
				return
			}
		}
		if readErr != nil {
			if errors.Is(readErr, io.EOF) {
				readErr = nil
			}
			dst.CloseWithError(readErr)
			return
		}
	}
}

// filterHTTP applies mode to JSON-RPC messages POSTed to next. onIgnore
// decides what silence looks like on the transport in question.
func filterHTTP(mode protocolMode, onIgnore http.HandlerFunc, next http.Handler, logger *slog.Logger) http.Handler {
	if mode == protocolAuto {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "cannot read request body", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))

		switch v, msg := mode.classify(body); v {
		case ignore:
			logger.Info("ignoring request", "protocol", mode, "method", msg.Method, "id", string(msg.ID))
			onIgnore(w, r)
		case refuse:
			logger.Info("refusing request", "protocol", mode, "method", msg.Method, "id", string(msg.ID))
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(methodNotFound(msg))
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// holdUntilGone never answers: the request stays open until the client gives
// up or the server shuts down. It is what silence looks like on streamable
// HTTP, where every request has its own response.
func holdUntilGone(_ http.ResponseWriter, r *http.Request) {
	<-r.Context().Done()
}

// acceptAndDrop acknowledges the POST like the SSE transport always does and
// then never sends a reply on the event stream.
func acceptAndDrop(w http.ResponseWriter, _ *http.Request) {
	w.WriteHeader(http.StatusAccepted)
}
