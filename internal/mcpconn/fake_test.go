package mcpconn_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"testing"

	"github.com/mcp-hangar/hangar/internal/mcpconn"
)

// rpcServer is a minimal MCP server speaking newline-delimited JSON-RPC
// over a pair of pipes, as a provider does over its stdin and stdout.
type rpcServer struct {
	rpcOptions

	mu      sync.Mutex
	methods []string
	out     io.Writer

	bigOnce   sync.Once
	bigResult []byte // the big tool's answer after its id
}

// rpcOptions shape an rpcServer's behaviour.
type rpcOptions struct {
	// rejectInitialize answers initialize with a JSON-RPC error, as a
	// server that only speaks the 2026-07-28 protocol does.
	rejectInitialize bool
	// modern answers server/discover; otherwise it is "method not found".
	modern bool
	// tools are served pageSize at a time (0: all at once).
	tools    []json.RawMessage
	pageSize int
	// endlessPages always returns a next cursor.
	endlessPages bool
	// big answers the tool "big" with these texts as its content, written
	// as one prepared line so the server allocates nothing per call.
	big []string
	// subscribe offers resources with subscriptions: each subscribe is
	// answered, then followed by an update of its URI and one of
	// file:///other; each unsubscribe by an update of its URI.
	subscribe bool
}

// start runs the server and returns the client side transport.
func (s *rpcServer) start(t *testing.T) (stdout io.Reader, stdin io.WriteCloser) {
	return s.startB(t)
}

func (s *rpcServer) startB(t testing.TB) (stdout io.Reader, stdin io.WriteCloser) {
	t.Helper()
	toServerR, toServerW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	s.out = toClientW
	go func() {
		defer toClientW.Close()
		sc := bufio.NewScanner(toServerR)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			s.handle(sc.Bytes())
		}
	}()
	// Closing the provider's stdin ends the server, which closes its
	// stdout: the client sees EOF.
	t.Cleanup(func() { _ = toServerW.Close() })
	return toClientR, toServerW
}

func (s *rpcServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.methods...)
}

type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func (s *rpcServer) handle(line []byte) {
	var req rpcRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return
	}
	s.mu.Lock()
	s.methods = append(s.methods, req.Method)
	s.mu.Unlock()
	if len(req.ID) == 0 {
		return // a notification
	}
	var params struct {
		ProtocolVersion string         `json:"protocolVersion"`
		Cursor          string         `json:"cursor"`
		Name            string         `json:"name"`
		Arguments       map[string]any `json:"arguments"`
		URI             string         `json:"uri"`
	}
	_ = json.Unmarshal(req.Params, &params)

	switch req.Method {
	case "initialize":
		if s.rejectInitialize {
			s.fail(req.ID, -32601, "Method not found: initialize")
			return
		}
		caps := map[string]any{"tools": map[string]any{}}
		if s.subscribe {
			caps["resources"] = map[string]any{"subscribe": true}
		}
		s.reply(req.ID, map[string]any{
			"protocolVersion": params.ProtocolVersion,
			"capabilities":    caps,
			"serverInfo":      map[string]any{"name": "fake", "version": "1"},
		})
	case "server/discover":
		if !s.modern {
			s.fail(req.ID, -32601, "Method not found: server/discover")
			return
		}
		s.reply(req.ID, map[string]any{
			"supportedVersions": []string{"2026-07-28"},
			"capabilities":      map[string]any{"tools": map[string]any{}},
			"serverInfo":        map[string]any{"name": "fake", "version": "1"},
		})
	case "ping":
		s.reply(req.ID, map[string]any{})
	case "resources/subscribe", "resources/unsubscribe":
		s.reply(req.ID, map[string]any{})
		s.notify("notifications/resources/updated", map[string]any{"uri": params.URI})
		if req.Method == "resources/subscribe" {
			s.notify("notifications/resources/updated", map[string]any{"uri": "file:///other"})
		}
	case "tools/list":
		start, _ := strconv.Atoi(params.Cursor)
		end := len(s.tools)
		if s.pageSize > 0 {
			end = min(start+s.pageSize, len(s.tools))
		}
		res := map[string]any{"tools": s.tools[start:end]}
		switch {
		case s.endlessPages:
			res["nextCursor"] = "0"
		case end < len(s.tools):
			res["nextCursor"] = strconv.Itoa(end)
		}
		s.reply(req.ID, res)
	case "tools/call":
		switch params.Name {
		case "echo":
			b, _ := json.Marshal(params.Arguments)
			s.reply(req.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": string(b)}}})
		case "big":
			s.writeBig(req.ID)
			return
		case "oops":
			s.reply(req.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": "tool broke"}}, "isError": true})
		default:
			s.fail(req.ID, -32602, "unknown tool: "+params.Name)
		}
	default:
		s.fail(req.ID, -32601, "Method not found: "+req.Method)
	}
}

func (s *rpcServer) reply(id json.RawMessage, result any) {
	s.write(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (s *rpcServer) notify(method string, params any) {
	s.write(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

func (s *rpcServer) fail(id json.RawMessage, code int, msg string) {
	s.write(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

func (s *rpcServer) write(v any) {
	b, _ := json.Marshal(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = fmt.Fprintf(s.out, "%s\n", b)
}

// connect starts s and connects to it with protocol.
func connect(t *testing.T, s *rpcServer, protocol string) (*mcpconn.Conn, error) {
	t.Helper()
	stdout, stdin := s.start(t)
	c, err := mcpconn.Connect(t.Context(), mcpconn.Stdio(stdout, stdin), protocol)
	if err == nil {
		t.Cleanup(func() { _ = c.Close() })
	}
	return c, err
}

func (s *rpcServer) writeBig(id json.RawMessage) {
	s.bigOnce.Do(func() {
		content := make([]map[string]any, len(s.big))
		for i, t := range s.big {
			content[i] = map[string]any{"type": "text", "text": t}
		}
		b, _ := json.Marshal(map[string]any{"content": content})
		s.bigResult = append(append([]byte(`,"result":`), b...), "}\n"...)
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.out.Write([]byte(`{"jsonrpc":"2.0","id":`))
	_, _ = s.out.Write(id)
	_, _ = s.out.Write(s.bigResult)
}
