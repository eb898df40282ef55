package group

import "github.com/mcp-hangar/hangar/internal/config"

// pick chooses the member for a call among those in rotation, skipping
// skip (the member a failover moves away from); nil when there is none.
// The caller holds g.mu.
func (g *Group) pick(skip *member) *member {
	ok := func(m *member) bool { return m.inRotation && m != skip }
	switch g.spec.Strategy {
	case config.StrategyWeightedRoundRobin:
		return g.smoothWeighted(ok)
	case config.StrategyLeastConnections:
		least := -1
		for _, m := range g.members {
			if ok(m) && (least < 0 || m.inflight < least) {
				least = m.inflight
			}
		}
		return g.next(func(m *member) bool { return ok(m) && m.inflight == least })
	case config.StrategyRandom:
		var cands []*member
		for _, m := range g.members {
			if ok(m) {
				cands = append(cands, m)
			}
		}
		if len(cands) == 0 {
			return nil
		}
		return cands[g.opts.Rand(len(cands))]
	case config.StrategyPriority:
		best := 0
		for _, m := range g.members {
			if ok(m) && (best == 0 || m.priority < best) {
				best = m.priority
			}
		}
		return g.next(func(m *member) bool { return ok(m) && m.priority == best })
	}
	return g.next(ok)
}

// next is round robin among the members ok accepts: the first one after
// the member picked last, in configuration order.
func (g *Group) next(ok func(*member) bool) *member {
	n := len(g.members)
	for i := range n {
		idx := (g.cursor + i) % n
		if m := g.members[idx]; ok(m) {
			g.cursor = idx + 1
			return m
		}
	}
	return nil
}

// smoothWeighted is nginx's smooth weighted round robin: every candidate's
// current weight grows by its weight, the largest wins and gives back the
// total. Over any run of total-weight picks each member is chosen exactly
// weight times, interleaved rather than in bursts (5,1,1 → a a b a c a a).
func (g *Group) smoothWeighted(ok func(*member) bool) *member {
	var best *member
	total := 0
	for _, m := range g.members {
		if !ok(m) {
			continue
		}
		m.current += m.weight
		total += m.weight
		if best == nil || m.current > best.current {
			best = m
		}
	}
	if best != nil {
		best.current -= total
	}
	return best
}
