package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-hangar/hangar/internal/endpoint"
)

// A call the gateway runs itself on a 2025-11-25 session (gateway/calls.go)
// keeps the relays mcp-go gives the calls it runs:
//
//   - sampling and roots requests go through mcp-go's server to the
//     session, which mcp-go writes on the session's GET stream: the call's
//     context carries the server for that (WithDirectCall), and without a
//     GET stream open they are refused at once, as on mcp-go's path;
//   - elicitation goes on the call's own response stream. mcp-go upgrades
//     the answer of a call it runs to text/event-stream for that; a direct
//     call does the same (CallStream), and the client's answer, POSTed as
//     a JSON-RPC response, is taken by Answers, a row of the routing table
//     ahead of mcp-go. The request ids are strings of the gateway's
//     ("hangar-elicit-7"), so they never meet mcp-go's numbered ones.

// answerIDPrefix starts the id of every request a CallStream sends.
const answerIDPrefix = "hangar-elicit-"

// Answers are the gateway's requests on call streams waiting for the
// client's answer, by session and id.
type Answers struct {
	seq     atomic.Uint64
	mu      sync.Mutex
	waiting map[string]chan clientAnswer
}

type clientAnswer struct {
	result json.RawMessage
	err    error
}

// NewAnswers returns an empty table.
func NewAnswers() *Answers { return &Answers{waiting: map[string]chan clientAnswer{}} }

func answerKey(session, id string) string { return session + "\x00" + id }

// await records a request of id on session; the channel gets its answer.
func (a *Answers) await(session, id string) (chan clientAnswer, func()) {
	ch := make(chan clientAnswer, 1)
	key := answerKey(session, id)
	a.mu.Lock()
	a.waiting[key] = ch
	a.mu.Unlock()
	return ch, func() {
		a.mu.Lock()
		delete(a.waiting, key)
		a.mu.Unlock()
	}
}

// Serve is the routing row of the answers: a POSTed JSON-RPC response to a
// request a CallStream sent on this session is taken and acknowledged with
// 202, as mcp-go acknowledges the answers to its own; every other message
// is declined.
func (a *Answers) Serve(w http.ResponseWriter, r *http.Request) bool {
	env, ok := endpoint.RequestEnvelope(r.Context())
	if !ok || env.Kind != endpoint.KindResponse {
		return false
	}
	var id string
	if json.Unmarshal(env.ID, &id) != nil || !strings.HasPrefix(id, answerIDPrefix) {
		return false
	}
	key := answerKey(r.Header.Get(server.HeaderKeySessionID), id)
	a.mu.Lock()
	ch, waiting := a.waiting[key]
	delete(a.waiting, key)
	a.mu.Unlock()
	if !waiting {
		return false // mcp-go answers what it does not know
	}
	body, _ := endpoint.BodyBytes(r)
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	var ans clientAnswer
	switch err := json.Unmarshal(body, &msg); {
	case err != nil:
		ans.err = fmt.Errorf("failed to parse the client's answer: %v", err)
	case msg.Error != nil:
		// As mcp-go words a client's error.
		ans.err = fmt.Errorf("%s error %d: %s", mcp.MethodElicitationCreate, msg.Error.Code, msg.Error.Message)
	default:
		ans.result = msg.Result
	}
	ch <- ans
	w.WriteHeader(http.StatusAccepted)
	return true
}

// CallStream is the response stream of a call the gateway runs itself on
// a 2025-11-25 session. It writes nothing until a request has to go to
// the client; then it upgrades the answer to text/event-stream, as mcp-go
// does, and the call's answer is the stream's last event (Finish).
type CallStream struct {
	w       http.ResponseWriter
	session string
	answers *Answers
	// canStream: the client accepts text/event-stream answers.
	canStream bool

	mu       sync.Mutex
	upgraded bool
}

// NewCallStream is the stream of the call r answers on w.
func NewCallStream(w http.ResponseWriter, r *http.Request, answers *Answers) *CallStream {
	return &CallStream{w: w, session: r.Header.Get(server.HeaderKeySessionID), answers: answers,
		canStream: strings.Contains(r.Header.Get("Accept"), "text/event-stream")}
}

// errCannotStream refuses an elicitation the client could not receive.
var errCannotStream = errors.New("hangar: the calling client does not accept text/event-stream answers, on which the request would go")

// Elicit sends req to the client on the call's stream and waits for its
// answer.
func (s *CallStream) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	if !s.canStream {
		return nil, errCannotStream
	}
	id := answerIDPrefix + strconv.FormatUint(s.answers.seq.Add(1), 10)
	ch, forget := s.answers.await(s.session, id)
	defer forget()
	msg := mcp.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id),
		Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)}, Params: req.Params}
	if err := s.event(msg); err != nil {
		return nil, err
	}
	select {
	case ans := <-ch:
		if ans.err != nil {
			return nil, ans.err
		}
		var res mcp.ElicitationResult
		if err := json.Unmarshal(ans.result, &res); err != nil {
			return nil, fmt.Errorf("failed to unmarshal elicitation response: %v", err)
		}
		return &res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// event writes v as a text/event-stream event, upgrading the answer first.
func (s *CallStream) event(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.upgrade()
	if _, err := fmt.Fprintf(s.w, "event: message\ndata: %s\n\n", data); err != nil {
		return err
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

// upgrade makes the answer a stream, with mcp-go's headers. Called with
// mu held.
func (s *CallStream) upgrade() {
	if s.upgraded {
		return
	}
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Connection", "keep-alive")
	h.Set("Cache-Control", "no-cache")
	s.w.WriteHeader(http.StatusOK)
	s.upgraded = true
}

// Finish writes the call's answer (a JSON-RPC message as json.Encoder
// writes it, ending in a newline): as the stream's last event when the
// stream was upgraded, else as the JSON body.
func (s *CallStream) Finish(answer []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.upgraded {
		_, err := fmt.Fprintf(s.w, "event: message\ndata: %s\n\n", strings.TrimSuffix(string(answer), "\n"))
		if f, ok := s.w.(http.Flusher); ok {
			f.Flush()
		}
		return err
	}
	s.w.Header().Set("Content-Type", "application/json")
	s.w.WriteHeader(http.StatusOK)
	_, err := s.w.Write(answer)
	return err
}

// directKey carries a direct call's server and stream to its relay.
type directKey struct{}

type directCall struct {
	srv    *server.MCPServer
	stream *CallStream
}

// WithDirectCall is ctx of a call the gateway runs itself on a session,
// with what its relay needs of mcp-go's place: the server, through which
// sampling and roots go to the session's GET stream, and the call's
// stream, on which elicitation goes.
func WithDirectCall(ctx context.Context, srv *server.MCPServer, stream *CallStream) context.Context {
	return context.WithValue(ctx, directKey{}, directCall{srv: srv, stream: stream})
}
