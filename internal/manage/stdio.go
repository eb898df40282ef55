package manage

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
)

// lockedWriter writes whole messages, one at a time: mcp-go writes each of
// its messages with a single Write, so the management answers written
// through the same lock never interleave with them.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Stdio serves the mcp/* methods on a stdio stream: it returns the input
// and output to give mcp-go's stdio server, and answers the management
// requests of in itself. The returned wait blocks until every management
// request being answered has been written; the reading goroutine ends at
// EOF on in (like mcp-go's own, it cannot be interrupted while blocked in
// a read).
func (s *Service) Stdio(ctx context.Context, in io.Reader, out io.Writer) (io.Reader, io.Writer, func()) {
	lw := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	go func() {
		r := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				var env envelope
				if json.Unmarshal(line, &env) == nil && IsMethod(env.Method) {
					if len(env.ID) > 0 && string(env.ID) != "null" {
						wg.Add(1)
						go func() {
							defer wg.Done()
							s.answer(ctx, env, lw)
						}()
					}
				} else if _, werr := pw.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					_ = pw.Close()
				} else {
					_ = pw.CloseWithError(err)
				}
				return
			}
		}
	}()
	return pr, lw, wg.Wait
}

// answer runs one request and writes its response as one line.
func (s *Service) answer(ctx context.Context, env envelope, w io.Writer) {
	resp := map[string]any{"jsonrpc": "2.0", "id": env.ID}
	if env.JSONRPC != "2.0" {
		resp["error"] = &RPCError{Code: CodeInvalidRequest, Message: `invalid request: jsonrpc must be "2.0"`}
	} else if res, rerr := s.Call(ctx, env.Method, env.Params); rerr != nil {
		resp["error"] = rerr
	} else {
		resp["result"] = res
	}
	b, err := json.Marshal(resp)
	if err != nil {
		s.Log.Error("management answer not encoded", "method", env.Method, "error", err)
		return
	}
	_, _ = w.Write(append(b, '\n'))
}
