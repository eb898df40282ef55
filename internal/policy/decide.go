package policy

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// Methods of the actions Decide is asked about: the ways a call reaches a
// provider.
const (
	MethodToolsCall          = "tools/call"
	MethodResourcesRead      = "resources/read"
	MethodResourcesSubscribe = "resources/subscribe"
	MethodPromptsGet         = "prompts/get"
	MethodComplete           = "completion/complete"
)

// Subject is who calls: the identity variable.
type Subject struct {
	// Name is the token's name or the JWT's subject (as in the audit).
	Name string
	// Subject and Issuer are the JWT's sub and iss; a static token's
	// subject is its name and its issuer "".
	Subject, Issuer string
	Scopes          []string
	// Groups are the token's groups, or the JWT's groups claim.
	Groups []string
	// Claims are the JWT's claims ({} for a static token).
	Claims map[string]any
}

// Server is the server a call reaches: the server variable, and the
// server's own policy.
type Server struct {
	ID string
	// Source is the catalog source that serves it: config, group,
	// installed, discovery or hotload.
	Source string
	Labels map[string]string
	Image  string
	// Policy is the server's own policy (nil: none). The engine compiles
	// it once per Spec value it is given (a new spec, a new compile).
	Policy *Spec
	// Installed says Policy came from an install (mcp/install): it only
	// narrows the gateway's.
	Installed bool
}

// Tool is the tool called (tools/call only).
type Tool struct {
	// Name is the tool's name on its server; Callable the name the caller
	// used on the front door ("" through hangar_call when it has none).
	Name, Callable string
	// Annotations are the tool's annotations as the server lists them
	// (raw JSON, decoded when a rule reads them); nil: none known.
	Annotations json.RawMessage
}

// Action is what a subject does: one call on one server.
type Action struct {
	// Method is one of the Method* constants.
	Method string
	// Protocol is the MCP protocol version of the caller's request.
	Protocol string
	// Time is when the call is made; zero: the engine's clock.
	Time   time.Time
	Server Server
	Tool   Tool
	// Args are the call's arguments: raw JSON (a front-door call) or a
	// decoded map (hangar_call); nil: none.
	Args any
	// ResourceURI is the URI read, subscribed or completed; PromptName
	// the prompt's name on its server.
	ResourceURI, PromptName string
}

// Decision is the policy's answer on one action.
type Decision struct {
	Allowed bool
	// Rule is the rule that decided, "" when the default did. A server's
	// own rules are named "<server>/<rule>".
	Rule string
	// Message is a refusing rule's message.
	Message string
	// Err is CEL's error when the deciding rule failed (and so decided
	// closed), or, when the default decided, the first allow rule that
	// failed; nil otherwise.
	Err error
	// Evaluated says rules were evaluated: false when no policy is set.
	Evaluated bool
}

// ErrServerPolicy wraps the compile error of a server's own policy: its
// calls are refused until it is fixed.
var ErrServerPolicy = errors.New("the server's own policy does not compile")

// activation gives a rule its variables, each made on first use, as CEL
// values (a Go string would be converted again at each reference).
type activation struct {
	ctx context.Context
	// bounded is ctx with EvalTimeout, made for the first rule that loops.
	bounded context.Context
	cancel  context.CancelFunc

	sub *Subject
	a   *Action
	// decodeNotes: a rule reads the tool's annotations.
	decodeNotes bool
	// listing: the activation of Hidden, where the arguments and the
	// request's time and protocol are unknown (CEL's unknown value, which
	// every operation but || and && passes on).
	listing bool

	identity, server, tool, request, resource, prompt map[string]any
	args                                              any // a JSON object (celObject) or an error value
}

var _ interpreter.Activation = (*activation)(nil)

// deadline is the context rules that loop run under: one EvalTimeout for
// all of a decision's.
func (v *activation) deadline() context.Context {
	if v.bounded == nil {
		ctx := v.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		v.bounded, v.cancel = context.WithTimeout(ctx, EvalTimeout)
	}
	return v.bounded
}

func (v *activation) done() {
	if v.cancel != nil {
		v.cancel()
	}
}

func (v *activation) Parent() interpreter.Activation { return nil }

func (v *activation) ResolveName(name string) (any, bool) {
	switch name {
	case varIdentity:
		if v.identity == nil {
			s := v.sub
			var claims any = emptyObject
			if len(s.Claims) > 0 {
				claims = celObject(s.Claims)
			}
			v.identity = map[string]any{"name": types.String(s.Name), "subject": types.String(s.Subject),
				"issuer": types.String(s.Issuer), "scopes": stringList(s.Scopes), "groups": stringList(s.Groups),
				"claims": claims}
		}
		return v.identity, true
	case varServer:
		if v.server == nil {
			s := v.a.Server
			var labels ref.Val = emptyObject
			if len(s.Labels) > 0 {
				labels = types.NewStringStringMap(adapter(), s.Labels)
			}
			v.server = map[string]any{"id": types.String(s.ID), "source": types.String(s.Source),
				"labels": labels, "image": types.String(s.Image)}
		}
		return v.server, true
	case varTool:
		if v.tool == nil {
			v.tool = map[string]any{"name": types.String(v.a.Tool.Name), "callable": types.String(v.a.Tool.Callable),
				"annotations": v.annotations()}
		}
		return v.tool, true
	case varArgs:
		if v.listing {
			return unknown, true
		}
		if v.args == nil {
			v.args = v.decodedArgs()
		}
		return v.args, true
	case varRequest:
		if v.request == nil {
			v.request = map[string]any{"protocol": types.String(v.a.Protocol), "time": types.Timestamp{Time: v.a.Time},
				"method": types.String(v.a.Method)}
			if v.listing {
				v.request["protocol"], v.request["time"] = unknown, unknown
			}
		}
		return v.request, true
	case varResource:
		if v.resource == nil {
			v.resource = map[string]any{"uri": types.String(v.a.ResourceURI)}
		}
		return v.resource, true
	case varPrompt:
		if v.prompt == nil {
			v.prompt = map[string]any{"name": types.String(v.a.PromptName)}
		}
		return v.prompt, true
	}
	return nil, false
}

var (
	unknown     = types.NewUnknown(0, nil)
	emptyObject = types.NewStringInterfaceMap(types.DefaultTypeAdapter, map[string]any{})
	emptyList   = types.NewStringList(types.DefaultTypeAdapter, nil)
)

func stringList(s []string) ref.Val {
	if len(s) == 0 {
		return emptyList
	}
	return types.NewStringList(adapter(), s)
}

// annotations are the tool's annotations as a JSON object ({} when none,
// or when no rule reads them).
func (v *activation) annotations() ref.Val {
	raw := v.a.Tool.Annotations
	if !v.decodeNotes || len(raw) == 0 {
		return emptyObject
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return emptyObject
	}
	return adapter().NativeToValue(m)
}

// decodedArgs are the call's arguments as a JSON object: numbers are
// doubles, as JSON has them. Arguments that are not an object are an
// error value: a rule that reads them fails (closed).
func (v *activation) decodedArgs() any {
	switch a := v.a.Args.(type) {
	case nil:
		return emptyObject
	case map[string]any:
		return celObject(a)
	case json.RawMessage:
		return decodeObject(a)
	case []byte:
		return decodeObject(a)
	}
	return types.NewErr("arguments are not a JSON object")
}

func decodeObject(raw []byte) any {
	if len(raw) == 0 {
		return emptyObject
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return types.NewErr("arguments are not a JSON object")
	}
	if m == nil { // null
		return emptyObject
	}
	return celObject(m)
}

// celObject is a JSON object whose top-level scalars are CEL values
// already: the interpreter reads a Go map's keys itself, and converts a
// Go string or number it finds there again at each reference (most rules
// read top-level arguments, often several times). Objects and lists
// below stay Go values, converted when read.
func celObject(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch x := v.(type) {
		case string:
			out[k] = types.String(x)
		case float64:
			out[k] = types.Double(x)
		case bool:
			out[k] = types.Bool(x)
		case nil:
			out[k] = types.NullValue
		default:
			out[k] = v
		}
	}
	return out
}
