package policy

import (
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// layer is the rules and the default one decision applies: the gateway's
// policy, a config server's merged with it, or an installed server's own.
// It is built once per policy (and per pair of a server's and the
// gateway's), never per call.
type layer struct {
	deny, allow []qualified
	def         string
	// anyDeny and anyAllow are the layer's deny (allow) conditions as one
	// program, (a) || (b) || …: one evaluation tells that none matches
	// and none fails, the common case of a call, at about half the cost
	// of evaluating the rules one by one. When it says otherwise, the
	// rules are evaluated in order to find the one that decides. nil for
	// fewer than two rules.
	anyDeny, anyAllow *combined
	// notes: a rule reads the tool's annotations.
	notes bool
}

type qualified struct {
	*rule
	name string // the rule's name; "<server>/<name>" for a server's own
}

type combined struct {
	prg   cel.Program
	loops bool
}

// newLayer is g's rules and then server's (a config server's own policy
// adds to the gateway's; its default, when set, replaces it). Either may
// be nil.
func newLayer(g, server *Policy, id string) (*layer, error) {
	l := &layer{}
	for _, p := range []*Policy{g, server} {
		if p == nil {
			continue
		}
		prefix := ""
		if p == server {
			prefix = id + "/"
		}
		for _, r := range p.deny {
			l.deny = append(l.deny, qualified{r, prefix + r.Name})
		}
		for _, r := range p.allow {
			l.allow = append(l.allow, qualified{r, prefix + r.Name})
		}
		if p.def != "" {
			l.def = p.def
		}
		l.notes = l.notes || p.annotations
	}
	var err error
	if l.anyDeny, err = combine(l.deny); err != nil {
		return nil, err
	}
	if l.anyAllow, err = combine(l.allow); err != nil {
		return nil, err
	}
	return l, nil
}

// combine compiles rules' conditions as one disjunction.
func combine(rules []qualified) (*combined, error) {
	if len(rules) < 2 {
		return nil, nil
	}
	e, err := wideEnv()
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	loops := false
	for i, r := range rules {
		if i > 0 {
			b.WriteString(" || ")
		}
		// A condition of dyn type (args.flag) is a bool or an error at
		// run time, in the disjunction as alone.
		b.WriteString("(")
		b.WriteString(r.When)
		b.WriteString(")")
		loops = loops || r.loops
	}
	checked, iss := e.Compile(b.String())
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("policy: combining conditions: %w", iss.Err())
	}
	c := &combined{loops: loops}
	if c.prg, err = e.Program(checked, cel.InterruptCheckFrequency(interruptEvery)); err != nil {
		return nil, err
	}
	return c, nil
}

func (l *layer) empty() bool { return len(l.deny) == 0 && len(l.allow) == 0 && l.def != Deny }

// decide decides act on l: the first deny rule that matches or fails,
// else the first allow rule that matches, else the default.
func (l *layer) decide(act *activation) Decision {
	if l.anyDeny == nil || !l.anyDeny.falseOn(act) {
		for _, r := range l.deny {
			match, err := r.eval(act)
			if match || err != nil {
				return Decision{Rule: r.name, Message: r.Message, Err: err, Evaluated: true}
			}
		}
	}
	// Under a default allow an allow rule rarely matches: one program
	// says so. Under a default deny one usually does: the rules are asked
	// in order straight away.
	if l.def != Deny && l.anyAllow != nil && l.anyAllow.falseOn(act) {
		return Decision{Allowed: true, Evaluated: true}
	}
	var failed error
	for _, r := range l.allow {
		match, err := r.eval(act)
		if match {
			return Decision{Allowed: true, Rule: r.name, Evaluated: true}
		}
		if err != nil && failed == nil {
			failed = fmt.Errorf("rule %q: %w", r.name, err)
		}
	}
	return Decision{Allowed: l.def != Deny, Err: failed, Evaluated: true}
}

// falseOn reports whether the disjunction is false on act: no rule
// matches and none fails.
func (c *combined) falseOn(act *activation) bool {
	out, err := run(c.prg, c.loops, act)
	return err == nil && out == types.False
}

// eval runs the rule on act: whether it matches, or why it could not be
// told.
func (r *rule) eval(act *activation) (bool, error) {
	out, err := run(r.prg, r.loops, act)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("the condition's result is %s, not a boolean", out.Type().TypeName())
	}
	return bool(b), nil
}

// run evaluates prg on act; a program with loops runs under the
// decision's deadline.
func run(prg cel.Program, loops bool, act *activation) (ref.Val, error) {
	var out ref.Val
	var err error
	if loops {
		out, _, err = prg.ContextEval(act.deadline(), act)
	} else {
		out, _, err = prg.Eval(act)
	}
	return out, err
}

// hidden reports whether l refuses every call act could be (a listing's
// activation: arguments, time and protocol unknown): a deny rule matches
// or fails without them, or no allow rule can match and the default is
// deny. One evaluation of each disjunction tells: CEL's || is true when a
// term is, unknown when a term is and none is true, and an error only
// when every term is false or an error. A rule that fails only beside an
// unknown is missed here (the call is refused when it is made).
func (l *layer) hidden(act *activation) bool {
	if match, known, err := anyOf(l.deny, l.anyDeny, act); err != nil || (known && match) {
		return true
	}
	if l.def != Deny {
		return false
	}
	match, known, err := anyOf(l.allow, l.anyAllow, act)
	return err != nil || (known && !match)
}

// anyOf evaluates the disjunction of rules (c, or the one rule) on a
// listing's activation: known is false when the outcome depends on what
// the listing does not know.
func anyOf(rules []qualified, c *combined, act *activation) (match, known bool, err error) {
	var out ref.Val
	switch {
	case len(rules) == 0:
		return false, true, nil
	case c == nil:
		out, err = run(rules[0].prg, rules[0].loops, act)
	default:
		out, err = run(c.prg, c.loops, act)
	}
	if err != nil {
		return false, true, err
	}
	if types.IsUnknown(out) {
		return false, false, nil
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, true, fmt.Errorf("the condition's result is %s, not a boolean", out.Type().TypeName())
	}
	return bool(b), true, nil
}
