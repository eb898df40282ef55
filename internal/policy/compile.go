package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
)

// EvalTimeout bounds the evaluation of one decision's rules that loop
// (all, exists, map, filter over a list or map): a rule that would loop
// longer (nested loops over a huge argument, say) is interrupted, with
// the error "operation interrupted: context deadline exceeded", and fails
// closed like any other error. Rules without loops are linear in the size
// of what they read, which the endpoint bounds (max_request_body_bytes).
//
// CEL's cost limit (cel.CostLimit) is not used: cel-go's runtime cost
// tracker keeps a stack that grows with each iteration of a loop and is
// searched linearly, so with it a loop over n elements costs O(n²) time
// and a single all() over 20,000 elements runs for seconds below the
// limit (TestLoopsAreBounded).
const EvalTimeout = 5 * time.Millisecond

// interruptEvery is how many loop iterations run between two checks of
// the deadline.
const interruptEvery = 64

// Policy is a compiled Spec.
type Policy struct {
	def   string
	rules []*rule // as configured
	deny  []*rule
	allow []*rule
	// What the rules read, beyond names: which identity fields (for the
	// listing's view of a caller), and whether any reads the tool's
	// annotations (decoded only then).
	identity    []string
	annotations bool
	// self is the policy alone as a layer (the gateway's, or an
	// installed server's own).
	self *layer
}

// rule is one compiled rule.
type rule struct {
	Rule
	prg cel.Program
	// loops: the condition has a comprehension; it runs under a deadline.
	loops bool
}

// Compile compiles spec: every rule's condition is parsed and checked
// against the declared variables and must be a boolean. A spec with a
// problem returns a *CompileError naming each (rules[3].when: CEL's
// message).
func Compile(spec Spec) (*Policy, error) {
	problems := checkShape(spec)
	var e *cel.Env
	if len(spec.Rules) > 0 {
		// Built on first use: a gateway without rules never builds it.
		var err error
		if e, err = env(); err != nil {
			return nil, fmt.Errorf("policy: CEL environment: %w", err)
		}
	}
	p := &Policy{def: spec.Default}
	fields := map[string]bool{}
	for i, r := range spec.Rules {
		if r.When == "" || len(r.When) > maxWhenLen {
			continue // reported by checkShape
		}
		cr, reads, msg := compileRule(e, r)
		if msg != "" {
			problems = append(problems, Problem{Field: fmt.Sprintf("rules[%d].when", i), Message: msg})
			continue
		}
		p.rules = append(p.rules, cr)
		if r.Effect == Deny {
			p.deny = append(p.deny, cr)
		} else {
			p.allow = append(p.allow, cr)
		}
		for f := range reads.identity {
			fields[f] = true
		}
		p.annotations = p.annotations || reads.annotations
	}
	if len(problems) > 0 {
		return nil, &CompileError{Problems: problems}
	}
	for f := range fields {
		p.identity = append(p.identity, f)
	}
	slices.Sort(p.identity)
	var err error
	if p.self, err = newLayer(p, nil, ""); err != nil {
		return nil, err
	}
	return p, nil
}

// Check reports what is wrong with spec, nil when it compiles (the config
// loader's and the install's check).
func Check(spec Spec) []Problem {
	if _, err := Compile(spec); err != nil {
		if ce, ok := err.(*CompileError); ok {
			return ce.Problems
		}
		return []Problem{{Field: "rules", Message: err.Error()}}
	}
	return nil
}

// compileRule compiles r's condition, or returns CEL's message.
func compileRule(e *cel.Env, r Rule) (*rule, reads, string) {
	checked, iss := e.Compile(r.When)
	if iss != nil && iss.Err() != nil {
		return nil, reads{}, celMessage(iss.Err().Error())
	}
	switch t := checked.OutputType(); {
	case t.IsExactType(types.BoolType), t.IsExactType(types.DynType):
	default:
		return nil, reads{}, fmt.Sprintf("must be a boolean condition, but its result is of type %s", t)
	}
	rd := readsOf(checked.NativeRep())
	prg, err := e.Program(checked, cel.InterruptCheckFrequency(interruptEvery))
	if err != nil {
		return nil, reads{}, celMessage(err.Error())
	}
	return &rule{Rule: r, prg: prg, loops: rd.loops}, rd, ""
}

// celMessage is CEL's message without the name of its input ("<input>"),
// which means nothing in a config file.
func celMessage(s string) string {
	s = strings.ReplaceAll(s, "ERROR: <input>:", "")
	s = strings.ReplaceAll(s, " (in container '')", "")
	return strings.TrimSpace(s)
}

// reads is what a condition reads.
type reads struct {
	identity    map[string]bool // identity fields; every one when it reads identity whole
	annotations bool            // tool.annotations
	loops       bool            // a comprehension
}

// readsOf walks a checked condition for the variables and fields it
// reads. A variable read other than by a field (identity["name"], or
// passed whole) counts as reading every field. Of identity.claims it
// notes the claims read by name (identity.claims.dept, has() of one, or
// identity.claims.?dept): a listing then depends on those claims alone,
// not on the ones every token has of its own (iat, exp, jti).
func readsOf(a *ast.AST) reads {
	rd := reads{identity: map[string]bool{}}
	selected := map[int64]string{} // expr id → the field a select or optional select takes of it
	var idents []ast.Expr
	ast.PreOrderVisit(a.Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		switch e.Kind() {
		case ast.SelectKind:
			selected[e.AsSelect().Operand().ID()] = e.AsSelect().FieldName()
		case ast.CallKind:
			// x.?f is the call _?._(x, "f").
			if c := e.AsCall(); c.FunctionName() == "_?._" && len(c.Args()) == 2 && c.Args()[1].Kind() == ast.LiteralKind {
				if f, ok := c.Args()[1].AsLiteral().Value().(string); ok {
					selected[c.Args()[0].ID()] = f
				}
			}
		case ast.IdentKind:
			idents = append(idents, e)
		case ast.ComprehensionKind:
			rd.loops = true
		}
	}))
	all := func(v string) {
		for f := range vars[v] {
			rd.field(v, f)
		}
	}
	for _, id := range idents {
		v := id.AsIdent()
		if _, declared := vars[v]; !declared {
			continue // a comprehension's own variable
		}
		f, ok := selected[id.ID()]
		if !ok {
			all(v)
			continue
		}
		if v == varIdentity && f == "claims" {
			if claim, byName := selected[selectOf(a, id)]; byName {
				f = "claims." + claim
			}
		}
		rd.field(v, f)
	}
	return rd
}

// selectOf is the id of the select or optional select that takes a field
// of ident (0 when none does).
func selectOf(a *ast.AST, ident ast.Expr) int64 {
	var out int64
	ast.PreOrderVisit(a.Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		switch e.Kind() {
		case ast.SelectKind:
			if e.AsSelect().Operand().ID() == ident.ID() {
				out = e.ID()
			}
		case ast.CallKind:
			if c := e.AsCall(); c.FunctionName() == "_?._" && len(c.Args()) == 2 && c.Args()[0].ID() == ident.ID() {
				out = e.ID()
			}
		}
	}))
	return out
}

func (rd *reads) field(v, f string) {
	switch v {
	case varIdentity:
		rd.identity[f] = true
	case varTool:
		rd.annotations = rd.annotations || f == "annotations"
	}
}
