package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"go.opentelemetry.io/otel/semconv/v1.39.0/mcpconv"
	"go.opentelemetry.io/otel/trace"
)

// Network transports (network.transport) between a client and hangar, or
// hangar and a provider.
const (
	TransportTCP  = "tcp"  // HTTP (mcpconv.NetworkTransportTCP)
	TransportPipe = "pipe" // stdio (mcpconv.NetworkTransportPipe)
)

// ErrorToolError is error.type of a tools/call whose result has isError.
const ErrorToolError = "tool_error"

// hangar's own attributes.
const (
	AttrServer    = attribute.Key("hangar.server")     // the provider or group called
	AttrGroup     = attribute.Key("hangar.group")      // the group a member was chosen in
	AttrMember    = attribute.Key("hangar.member")     // the group member chosen
	AttrColdStart = attribute.Key("hangar.cold_start") // the call waited for its provider to start
	AttrIdentity  = attribute.Key("hangar.identity")   // the caller's name, never its token
	AttrImage     = attribute.Key("hangar.image")
)

// Names of the steps of a call (child spans) and of its events.
const (
	StepQueueWait = "hangar.queue_wait"
	StepColdStart = "hangar.cold_start"
	StepImagePull = "hangar.image_pull"
	EventRetry    = "hangar.retry"
)

// legacySessions is the last protocol version with sessions:
// mcp.session.id is set for it only.
const legacySessions = "2025-11-25"

var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Propagator is what hangar reads and writes trace context with
// (traceparent, tracestate, baggage).
func Propagator() propagation.TextMapPropagator { return propagator }

// ServerRequest is one MCP request as hangar receives it.
type ServerRequest struct {
	Method string
	// Params are the request's params as sent: the target (tool, prompt,
	// resource) and the _meta trace context are read from them.
	Params json.RawMessage
	// Target and Meta stand for Params when the request is decoded
	// already (the tool name, prompt name or resource URI; its _meta).
	Target          string
	Meta            map[string]any
	ID              json.RawMessage // the JSON-RPC id as sent
	ProtocolVersion string
	SessionID       string
	ClientAddress   string
	Transport       string
	// Header carries trace context when params._meta has none.
	Header   http.Header
	Identity string
}

// ClientRequest is one request hangar sends to a provider.
type ClientRequest struct {
	Method string
	// Tool is the tool's or the prompt's name; URI a resource's.
	Tool            string
	URI             string
	Server          string // the provider's ID
	Address         string
	Port            int
	Transport       string
	ProtocolVersion string
	ColdStart       bool
}

// Op is one traced operation, a SERVER or a CLIENT span with its
// duration metric. A nil *Op does nothing.
type Op struct {
	t      *Telemetry
	span   trace.Span
	ctx    context.Context
	began  time.Time
	client bool
	method string
	server string
	// metric names the operation's duration series, error type aside.
	metric metricKey
	// late are the attributes learnt while the operation runs (its target),
	// set on the span with error.type in one go at the end.
	late []attribute.KeyValue

	mu         sync.Mutex
	errType    string
	httpStatus int // an HTTP error status, the error.type when no code is known
}

// opKey carries the SERVER operation of a request, the trace span's
// bookkeeping, from the endpoint's first stage through mcp-go to the
// handlers that name its target: trace plumbing, which is what a context
// is for.
type opKey struct{}

// ServerOp is the SERVER operation ctx is serving, nil when none.
func ServerOp(ctx context.Context) *Op {
	op, _ := ctx.Value(opKey{}).(*Op)
	return op
}

// params is what the span needs of a request's params.
type params struct {
	Name            string `json:"name"`
	URI             string `json:"uri"`
	ProtocolVersion string `json:"protocolVersion"`
	// Meta holds the trace context fields only: the rest of _meta is
	// skipped, not decoded.
	Meta struct {
		Traceparent string `json:"traceparent"`
		Tracestate  string `json:"tracestate"`
		Baggage     string `json:"baggage"`
	} `json:"_meta"`
}

// StartServer starts the SERVER span of r, the child of the trace context
// in params._meta (SEP-414), else in the headers.
func (t *Telemetry) StartServer(ctx context.Context, r ServerRequest) (context.Context, *Op) {
	if t == nil {
		return ctx, nil
	}
	// Callers choose method names: only the protocol's become labels.
	r.Method = MethodName(r.Method)
	if t.tracer == nil {
		// Metrics only: the method and, at the end, the error type.
		op := &Op{t: t, began: time.Now(), method: r.Method}
		ctx = context.WithValue(ctx, opKey{}, op)
		op.ctx = ctx
		return ctx, op
	}
	var p params
	if len(r.Params) > 0 {
		if !scanParams(r.Params, &p) {
			p = params{}
			_ = json.Unmarshal(r.Params, &p) // a bad params is mcp-go's to refuse
		}
	} else {
		p.Name, p.URI = r.Target, r.Target
		p.Meta.Traceparent, _ = r.Meta["traceparent"].(string)
		p.Meta.Tracestate, _ = r.Meta["tracestate"].(string)
		p.Meta.Baggage, _ = r.Meta["baggage"].(string)
	}
	if c := metaCarrier(p.Meta.Traceparent, p.Meta.Tracestate, p.Meta.Baggage); c != nil {
		ctx = propagator.Extract(ctx, c)
	} else if r.Header != nil {
		ctx = propagator.Extract(ctx, propagation.HeaderCarrier(r.Header))
	}
	ctx = t.keepBaggage(ctx)
	version := r.ProtocolVersion
	if version == "" {
		version = p.ProtocolVersion
	}
	buf := attrPool.Get().(*[]attribute.KeyValue)
	defer putAttrs(buf)
	target, attrs := targetAttrs((*buf)[:0], r.Method, p.Name, p.URI)
	attrs = append(attrs,
		semconv.JSONRPCRequestID(requestID(r.ID)),
		semconv.NetworkTransportKey.String(r.Transport),
	)
	if version != "" {
		attrs = append(attrs, semconv.McpProtocolVersion(version))
	}
	if r.SessionID != "" && version == legacySessions {
		attrs = append(attrs, semconv.McpSessionID(r.SessionID))
	}
	if r.ClientAddress != "" {
		attrs = append(attrs, semconv.ClientAddress(r.ClientAddress))
	}
	if r.Identity != "" {
		attrs = append(attrs, AttrIdentity.String(r.Identity))
	}
	ctx, span := t.tracer.Start(ctx, spanName(r.Method, target),
		trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	op := &Op{t: t, span: span, began: time.Now(), method: r.Method,
		metric: metricKey{method: r.Method, target: target, transport: r.Transport, version: version}}
	ctx = context.WithValue(ctx, opKey{}, op)
	op.ctx = ctx
	return ctx, op
}

// StartClient starts the CLIENT span of a request to a provider, the
// child of the span in ctx; the context it returns is the one to inject.
func (t *Telemetry) StartClient(ctx context.Context, r ClientRequest) (context.Context, *Op) {
	if t == nil {
		return ctx, nil
	}
	r.Method = MethodName(r.Method)
	if t.tracer == nil {
		return ctx, &Op{t: t, ctx: ctx, began: time.Now(), client: true, method: r.Method, server: r.Server}
	}
	buf := attrPool.Get().(*[]attribute.KeyValue)
	defer putAttrs(buf)
	target, attrs := targetAttrs((*buf)[:0], r.Method, r.Tool, r.URI)
	attrs = append(attrs, semconv.NetworkTransportKey.String(r.Transport), AttrServer.String(r.Server))
	if r.Address != "" {
		attrs = append(attrs, semconv.ServerAddress(r.Address))
	}
	if r.Port > 0 {
		attrs = append(attrs, semconv.ServerPort(r.Port))
	}
	if r.ProtocolVersion != "" {
		attrs = append(attrs, semconv.McpProtocolVersion(r.ProtocolVersion))
	}
	if r.ColdStart {
		attrs = append(attrs, AttrColdStart.Bool(true))
	}
	if g := groupOf(ctx); g != "" {
		attrs = append(attrs, AttrGroup.String(g))
	}
	ctx, span := t.tracer.Start(ctx, spanName(r.Method, target),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, &Op{t: t, span: span, ctx: ctx, began: time.Now(), client: true, method: r.Method, server: r.Server,
		metric: metricKey{client: true, method: r.Method, target: target, transport: r.Transport, address: r.Address, port: r.Port}}
}

// attrPool holds the attribute slices spans start with: the SDK copies
// them (trace.WithAttributes' option, then the span), so a slice is free
// again once Start returns, and a traced request needs no new one.
var attrPool = sync.Pool{New: func() any {
	s := make([]attribute.KeyValue, 0, 12)
	return &s
}}

func putAttrs(s *[]attribute.KeyValue) {
	clear((*s)[:cap(*s)]) // no strings kept alive from the pool
	attrPool.Put(s)
}

// targetAttrs are the span name's target and, appended to attrs, the
// attributes that name what is called, shared by the span and its metric.
func targetAttrs(attrs []attribute.KeyValue, method, name, uri string) (string, []attribute.KeyValue) {
	attrs = append(attrs, semconv.McpMethodNameKey.String(method))
	switch method {
	case string(mcpconv.MethodNameToolsCall):
		if name != "" {
			attrs = append(attrs, semconv.GenAIToolName(name))
		}
		attrs = append(attrs, semconv.GenAIOperationNameKey.String(string(mcpconv.GenAIOperationNameExecuteTool)))
		return name, attrs
	case string(mcpconv.MethodNamePromptsGet):
		if name != "" {
			attrs = append(attrs, semconv.GenAIPromptName(name))
		}
		return name, attrs
	case string(mcpconv.MethodNameResourcesRead), string(mcpconv.MethodNameResourcesSubscribe),
		string(mcpconv.MethodNameResourcesUnsubscribe):
		if uri != "" {
			// Not in the span name: a URI can be anything, names cannot.
			attrs = append(attrs, semconv.McpResourceURI(uri))
		}
	}
	return "", attrs
}

func spanName(method, target string) string {
	if target == "" {
		return method
	}
	return method + " " + target
}

// requestID is the id as the conventions write it: a string's content, a
// number's digits.
func requestID(raw json.RawMessage) string {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// Fail records a JSON-RPC error code as the operation's error.type; the
// first error recorded wins.
func (o *Op) Fail(code int) {
	if o != nil {
		o.setError(strconv.Itoa(code))
	}
}

// ToolError records a tools/call result with isError.
func (o *Op) ToolError() {
	if o != nil {
		o.setError(ErrorToolError)
	}
}

// SetErrorType records errType ("" for none) as the operation's error.type.
func (o *Op) SetErrorType(errType string) {
	if o != nil && errType != "" {
		o.setError(errType)
	}
}

func (o *Op) setError(t string) {
	o.mu.Lock()
	if o.errType == "" {
		o.errType = t
	}
	o.mu.Unlock()
}

// Target records the provider or group a call of the operation went to.
func (o *Op) Target(server string, group bool) {
	if o == nil {
		return
	}
	key := AttrServer
	if group {
		key = AttrGroup
	}
	o.mu.Lock()
	o.late = append(o.late, key.String(server))
	o.mu.Unlock()
}

// End ends the span, with ERROR status and error.type when an error was
// recorded, and records the operation's duration.
func (o *Op) End() {
	if o == nil {
		return
	}
	secs := time.Since(o.began).Seconds()
	o.mu.Lock()
	errType := o.errType
	if errType == "" && o.httpStatus != 0 {
		errType = strconv.Itoa(o.httpStatus)
	}
	late := o.late
	o.mu.Unlock()
	if o.span == nil {
		// Metrics only: no span, no OTLP histogram, no exemplar.
		if o.client {
			o.t.rec.ClientOperation(o.server, o.method, errType, secs, "")
		} else {
			o.t.rec.ServerOperation(o.method, errType, secs, "")
		}
		return
	}
	if errType != "" {
		late = append(late, semconv.ErrorTypeKey.String(errType))
		o.span.SetStatus(codes.Error, errType)
	}
	if len(late) > 0 {
		o.span.SetAttributes(late...)
	}
	key := o.metric
	key.errType = errType
	if errType != "" && errType != ErrorToolError {
		// The call was refused or failed before a tool answered: the name
		// is the caller's, maybe of no tool at all, and would make a
		// series per name a caller makes up. The span keeps it.
		key.target = ""
	}
	set := o.t.sets.get(key)
	traceID := ""
	if sc := o.span.SpanContext(); sc.IsSampled() {
		traceID = sc.TraceID().String()
	}
	o.span.End()
	if o.client {
		o.t.clientDur.RecordSet(o.ctx, secs, set)
		if o.t.rec != nil {
			o.t.rec.ClientOperation(o.server, o.method, errType, secs, traceID)
		}
		return
	}
	o.t.serverDur.RecordSet(o.ctx, secs, set)
	if o.t.rec != nil {
		o.t.rec.ServerOperation(o.method, errType, secs, traceID)
	}
}

// groupKey notes, for the member's CLIENT span, the group that chose it:
// span attributes, set only on a traced context.
type groupKey struct{}

// WithGroup marks ctx as a call to group: the member's CLIENT span says
// which group chose it. ctx is returned as is when it is not traced.
func WithGroup(ctx context.Context, group string) context.Context {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx
	}
	return context.WithValue(ctx, groupKey{}, group)
}

func groupOf(ctx context.Context) string {
	g, _ := ctx.Value(groupKey{}).(string)
	return g
}

var noEnd = func(error) {}

// Step starts a child span named name (one of the Step* names) of the
// span in ctx, if that one is recording; end ends it, with ERROR status
// for a non-nil error.
func Step(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, func(err error)) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, noEnd
	}
	ctx, span := parent.TracerProvider().Tracer(ScopeName).Start(ctx, name,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, func(err error) {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// Event adds an event (EventRetry) to the span in ctx.
func Event(ctx context.Context, name string, attrs ...attribute.KeyValue) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(name, trace.WithAttributes(attrs...))
	}
}

// Recording reports whether ctx carries a span that records.
func Recording(ctx context.Context) bool { return trace.SpanFromContext(ctx).IsRecording() }

// minWait is the shortest wait StepSince shows: an uncontended slot is
// no step of the call.
const minWait = time.Millisecond

// StepSince records a step that began at began and ends now as a child
// span of the span in ctx, when it took at least a millisecond; a zero
// began (the call is not traced) records nothing.
func StepSince(ctx context.Context, name string, began time.Time, err error) {
	if began.IsZero() || time.Since(began) < minWait {
		return
	}
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return
	}
	_, span := parent.TracerProvider().Tracer(ScopeName).Start(ctx, name,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(began))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// clientKey notes, for a CLIENT span mcpconn starts, the provider the
// request goes to: span attributes, set only when telemetry is on.
type clientKey struct{}

type clientBase struct {
	t *Telemetry
	r ClientRequest
}

// WithClient notes in ctx the provider r names (its server and peer) for
// StartRequest, which a connection that knows only the method calls; ctx
// as is when telemetry is off, or tracing is on and ctx is not traced.
func (t *Telemetry) WithClient(ctx context.Context, r ClientRequest) context.Context {
	if t == nil || (t.tracer != nil && !trace.SpanFromContext(ctx).IsRecording()) {
		return ctx
	}
	return context.WithValue(ctx, clientKey{}, &clientBase{t: t, r: r})
}

// StartRequest starts the CLIENT span of a request other than tools/call
// (resources/read, prompts/get) to the provider WithClient noted in ctx;
// nil when there is none.
func StartRequest(ctx context.Context, method, name, uri string) (context.Context, *Op) {
	b, _ := ctx.Value(clientKey{}).(*clientBase)
	if b == nil {
		return ctx, nil
	}
	r := b.r
	r.Method, r.Tool, r.URI = method, name, uri
	return b.t.StartClient(ctx, r)
}

// ErrorOther is error.type of a failure with no better name.
const ErrorOther = "_OTHER" // mcpconv.ErrorTypeOther

// EndRequest ends a StartRequest operation with err's outcome.
func (o *Op) EndRequest(err error) {
	if o == nil {
		return
	}
	if err != nil {
		o.setError(ClientErrorType(err))
	}
	o.End()
}

// codeErrors are the JSON-RPC codes mcp-go's client turns into these
// errors (mcp.JSONRPCErrorDetails.AsError); a code it does not know
// becomes a bare message and is lost.
var codeErrors = []struct {
	err  error
	code int
}{
	{mcp.ErrParseError, mcp.PARSE_ERROR}, {mcp.ErrInvalidRequest, mcp.INVALID_REQUEST},
	{mcp.ErrMethodNotFound, mcp.METHOD_NOT_FOUND}, {mcp.ErrInvalidParams, mcp.INVALID_PARAMS},
	{mcp.ErrInternalError, mcp.INTERNAL_ERROR}, {mcp.ErrRequestInterrupted, mcp.REQUEST_INTERRUPTED},
	{mcp.ErrResourceNotFound, mcp.RESOURCE_NOT_FOUND},
}

// ClientErrorType is error.type of a request to a provider that failed
// with err, as MCP's conventions name it: the JSON-RPC error code the
// provider answered with, else _OTHER (no answer: a timeout, a broken
// connection, a refusal before the request was sent).
func ClientErrorType(err error) string {
	for _, c := range codeErrors {
		if errors.Is(err, c.err) {
			return strconv.Itoa(c.code)
		}
	}
	var (
		hm mcp.HeaderMismatchError
		mc mcp.MissingRequiredClientCapabilityError
		uv mcp.UnsupportedProtocolVersionError
		ue mcp.URLElicitationRequiredError
	)
	switch {
	case errors.As(err, &hm):
		return strconv.Itoa(mcp.HEADER_MISMATCH)
	case errors.As(err, &mc):
		return strconv.Itoa(mcp.MISSING_REQUIRED_CLIENT_CAPABILITY)
	case errors.As(err, &uv):
		return strconv.Itoa(mcp.UNSUPPORTED_PROTOCOL_VERSION)
	case errors.As(err, &ue):
		return strconv.Itoa(mcp.URL_ELICITATION_REQUIRED)
	}
	return ErrorOther
}
