package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Engine is the policy in force: the gateway's (Set at load and at each
// reload) and the servers' own (compiled the first time a call or a
// listing needs them, and again when a server's spec changes). It is safe
// for concurrent use; deciding takes no lock.
type Engine struct {
	global atomic.Pointer[Policy]
	now    func() time.Time

	mu      sync.Mutex // serializes compiles of server policies and view changes
	servers sync.Map   // server ID → *serverPolicy
	// withServers: some server has a policy of its own.
	withServers atomic.Bool
	view        atomic.Pointer[viewFields]
}

type serverPolicy struct {
	spec *Spec
	p    *Policy
	err  error
	// own is p with its rules named "<server>/<rule>" (an installed
	// server's layer); merged is the gateway's policy with p's rules
	// added (a config server's), for the gateway's policy it was made
	// with.
	own    *layer
	merged atomic.Pointer[mergedLayer]
}

type mergedLayer struct {
	g   *Policy
	l   *layer
	err error
}

// viewFields are the identity fields some rule in force reads: callers
// who differ in none of them see the same listings.
type viewFields struct {
	epoch  uint64
	fields []string
}

// NewEngine returns an engine with no policy (every call allowed) on the
// clock now (nil: time.Now).
func NewEngine(now func() time.Time) *Engine {
	if now == nil {
		now = time.Now
	}
	e := &Engine{now: now}
	e.view.Store(&viewFields{})
	return e
}

// Set puts p in force as the gateway's policy (nil: none).
func (e *Engine) Set(p *Policy) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.global.Store(p)
	e.updateView()
}

// Active reports whether any rule or a default deny could refuse a call:
// false lets the endpoint skip reading requests for the policy's sake.
func (e *Engine) Active() bool {
	g := e.global.Load()
	return (g != nil && !g.self.empty()) || e.withServers.Load()
}

// Applies reports whether any policy applies to calls on s: false lets
// the caller skip building the action.
func (e *Engine) Applies(s Server) bool {
	g := e.global.Load()
	return (g != nil && !g.self.empty()) || s.Policy != nil
}

// Prepare compiles s's own policy ahead of its first call (the catalog's
// changes); the error is what refuses its calls until it is fixed.
func (e *Engine) Prepare(s Server) error {
	_, err := e.serverPolicy(s)
	return err
}

// Epoch counts the changes of what listings depend on: the gateway's
// policy and the servers' own.
func (e *Engine) Epoch() uint64 { return e.view.Load().epoch }

// Forget drops what the engine compiled of server id's own policy (the
// server is gone, or has no policy any more); views change if it had one.
func (e *Engine) Forget(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, had := e.servers.LoadAndDelete(id); had {
		e.updateView()
	}
}

// serverPolicy is s's own policy compiled, nil when it has none.
func (e *Engine) serverPolicy(s Server) (*serverPolicy, error) {
	if s.Policy == nil {
		return nil, nil
	}
	if v, ok := e.servers.Load(s.ID); ok {
		if sp := v.(*serverPolicy); sp.spec == s.Policy {
			return sp, sp.err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if v, ok := e.servers.Load(s.ID); ok {
		if sp := v.(*serverPolicy); sp.spec == s.Policy {
			return sp, sp.err
		}
	}
	sp := &serverPolicy{spec: s.Policy}
	sp.p, sp.err = Compile(*s.Policy)
	if sp.err == nil {
		sp.own, sp.err = newLayer(nil, sp.p, s.ID)
	}
	if sp.err != nil {
		sp.err = fmt.Errorf("%w: %v", ErrServerPolicy, sp.err)
	}
	e.servers.Store(s.ID, sp)
	e.withServers.Store(true)
	e.updateView()
	return sp, sp.err
}

// layers are what decides a call on s, in order: each must allow it.
// None means no policy applies.
func (e *Engine) layers(s Server) ([]*layer, error) {
	g := e.global.Load()
	sp, err := e.serverPolicy(s)
	if err != nil {
		return nil, err
	}
	var gl *layer
	if g != nil && !g.self.empty() {
		gl = g.self
	}
	switch {
	case sp == nil && gl == nil:
		return nil, nil
	case sp == nil:
		return []*layer{gl}, nil
	case s.Installed && gl == nil:
		return []*layer{sp.own}, nil
	case s.Installed:
		return []*layer{gl, sp.own}, nil
	}
	m := sp.merged.Load()
	if m == nil || m.g != g {
		m = &mergedLayer{g: g}
		m.l, m.err = newLayer(g, sp.p, s.ID)
		sp.merged.Store(m)
	}
	return []*layer{m.l}, m.err
}

// Decide is the policy's decision on sub doing a (see the package
// comment for precedence). ctx bounds the evaluation of rules that loop.
func (e *Engine) Decide(ctx context.Context, sub Subject, a Action) Decision {
	ls, err := e.layers(a.Server)
	if err != nil {
		return Decision{Err: err, Evaluated: true}
	}
	if len(ls) == 0 {
		return Decision{Allowed: true}
	}
	return e.decide(ctx, sub, a, ls)
}

// decide is Decide's evaluation, apart so that a call without a policy
// does not copy its action to the heap.
func (e *Engine) decide(ctx context.Context, sub Subject, a Action, ls []*layer) Decision {
	if a.Time.IsZero() {
		a.Time = e.now()
	}
	act := &activation{ctx: ctx, sub: &sub, a: &a, decodeNotes: notes(ls)}
	defer act.done()
	var out Decision
	for _, l := range ls {
		d := l.decide(act)
		if !d.Allowed {
			return d
		}
		if out.Rule == "" {
			out = d // the first layer's rule that allowed, if any
		}
	}
	return out
}

func notes(ls []*layer) bool {
	for _, l := range ls {
		if l.notes {
			return true
		}
	}
	return false
}

// updateView recomputes the identity fields read, and starts a new view
// epoch when they changed. e.mu is held.
func (e *Engine) updateView() {
	fields := map[string]bool{}
	add := func(p *Policy) {
		if p != nil {
			for _, f := range p.identity {
				fields[f] = true
			}
		}
	}
	add(e.global.Load())
	e.servers.Range(func(_, v any) bool {
		add(v.(*serverPolicy).p)
		return true
	})
	names := make([]string, 0, len(fields))
	for f := range fields {
		names = append(names, f)
	}
	slices.Sort(names)
	cur := e.view.Load()
	// A new epoch on every Set too: the gateway's rules changed, and
	// listings kept under the old ones must not be served.
	e.view.Store(&viewFields{epoch: cur.epoch + 1, fields: names})
}

// View is what sub's listings depend on beyond its scopes and servers:
// the policy's epoch and the values of the identity fields the rules
// read. Callers with the same view see the same tools.
//
// A server's policy compiled while a listing is computed (its first use)
// may read a field the view did not hold: the listing computed then is
// still right for the caller who asked, and the next request has the new
// epoch. Listings only hide; every call is decided again.
func (e *Engine) View(sub Subject) string {
	v := e.view.Load()
	b := []byte("policy ")
	b = strconv.AppendUint(b, v.epoch, 10)
	for _, f := range v.fields {
		b = append(append(b, ' '), f...)
		b = append(b, '=')
		switch f {
		case "name":
			b = strconv.AppendQuote(b, sub.Name)
		case "subject":
			b = strconv.AppendQuote(b, sub.Subject)
		case "issuer":
			b = strconv.AppendQuote(b, sub.Issuer)
		case "scopes":
			b = appendSet(b, sub.Scopes)
		case "groups":
			b = appendSet(b, sub.Groups)
		case "claims":
			b = appendHash(b, sub.Claims)
		default:
			if claim, ok := strings.CutPrefix(f, "claims."); ok {
				v, present := sub.Claims[claim]
				if !present {
					b = append(b, '-')
				} else {
					b = appendHash(b, v)
				}
			}
		}
	}
	return string(b)
}

// appendHash appends a hash of v's JSON: encoding/json sorts map keys, so
// equal values hash alike.
func appendHash(b []byte, v any) []byte {
	raw, _ := json.Marshal(v)
	sum := sha256.Sum256(raw)
	return append(b, hex.EncodeToString(sum[:16])...)
}

func appendSet(b []byte, s []string) []byte {
	sorted := slices.Compact(slices.Sorted(slices.Values(s)))
	return strconv.AppendQuote(b, strings.Join(sorted, "\x00"))
}

// Hidden reports whether every call of a (a tools/call; its arguments,
// time and protocol are ignored) by sub would be refused whatever its
// arguments: a deny rule matches (or fails) without them, or no allow
// rule can match and the default is deny. Such a tool is not listed to
// sub.
func (e *Engine) Hidden(sub Subject, a Action) bool {
	ls, err := e.layers(a.Server)
	if err != nil {
		return true // every call is refused
	}
	if len(ls) == 0 {
		return false
	}
	return hidden(sub, a, ls)
}

func hidden(sub Subject, a Action, ls []*layer) bool {
	act := &activation{sub: &sub, a: &a, decodeNotes: notes(ls), listing: true}
	defer act.done()
	for _, l := range ls {
		if l.hidden(act) {
			return true
		}
	}
	return false
}

// Rules lists the policy's rules as configured, for views.
func (p *Policy) Rules() []Rule {
	if p == nil {
		return nil
	}
	out := make([]Rule, len(p.rules))
	for i, r := range p.rules {
		out[i] = r.Rule
	}
	return out
}

// Default is the policy's default ("" for a server's policy that keeps
// the gateway's).
func (p *Policy) Default() string {
	if p == nil {
		return ""
	}
	return p.def
}
