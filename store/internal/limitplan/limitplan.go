// Package limitplan turns the limits that apply to one claim, and what counts against them, into
// what the claim may take: how many jobs in all, and how many of each kind. Every store does the
// same arithmetic, so it lives here once; counting and locking are the store's.
//
// It never reads or writes a store: a store locks the limits, counts their running jobs and
// recent starts under the lock, plans, claims within the plan, and records the starts.
package limitplan

import (
	"github.com/rotahq/rota/store"
)

// Usage is a limit with what counts against it at the moment of the claim.
type Usage = store.LimitUsage

// Plan is what one claim may take. A store claims in rounds: Kinds gives the kinds a round may
// take with at most how many of each, and the round's size is Budget; Took records a round.
// More than one round is needed only when a kind reached its cap while the jobs behind its
// held-back ones were not looked at yet.
type Plan struct {
	// Budget is how many jobs the claim may still take in all.
	Budget int
	kinds  []string
	caps   map[string]int // a limited kind's allowance; kinds without a limit are not in it
	limits []Usage
	queue  *Usage
	starts map[store.LimitScope]map[string]int
}

// New plans a claim of up to want jobs of queue with the given kinds, under the limits that
// apply to it (a queue limit on queue, kind limits on some of kinds; others are ignored).
func New(queue string, kinds []string, want int, limits []Usage) *Plan {
	p := &Plan{Budget: want, kinds: kinds, caps: make(map[string]int), limits: limits,
		starts: map[store.LimitScope]map[string]int{store.LimitQueue: {}, store.LimitKind: {}}}
	for i := range limits {
		u := &limits[i]
		switch {
		case u.Scope == store.LimitQueue && u.Name == queue:
			p.queue = u
			p.Budget = min(p.Budget, u.Allowance())
		case u.Scope == store.LimitKind:
			p.caps[u.Name] = u.Allowance()
		}
	}
	return p
}

// Kinds returns the kinds the next round may take, in the order the claim gave them, and the most
// jobs of each it may take. Kinds held back entirely are left out; it is empty when the claim
// may take nothing.
func (p *Plan) Kinds() (kinds []string, caps []int) {
	if p.Budget <= 0 {
		return nil, nil
	}
	for _, k := range p.kinds {
		c := p.Budget
		if limit, ok := p.caps[k]; ok {
			c = min(c, limit)
		}
		if c > 0 {
			kinds, caps = append(kinds, k), append(caps, c)
		}
	}
	return kinds, caps
}

// Took records the jobs a round claimed when it asked for asked, and reports whether another
// round may find more: the round came up short while a kind reached its cap, so jobs of other
// kinds may wait behind the ones that kind's limit left.
func (p *Plan) Took(jobs []*store.JobRow, asked int) (again bool) {
	p.Budget -= len(jobs)
	capped := false
	for _, j := range jobs {
		if p.queue != nil {
			p.starts[store.LimitQueue][p.queue.Name]++
		}
		if c, ok := p.caps[j.Kind]; ok {
			p.caps[j.Kind] = c - 1
			p.starts[store.LimitKind][j.Kind]++
			capped = capped || c == 1
		}
	}
	kinds, _ := p.Kinds()
	return capped && len(jobs) < asked && len(kinds) > 0
}

// Start is how many jobs a claim started under one rate limit, for the store to record.
type Start struct {
	Scope  store.LimitScope
	Name   string
	Period int64 // microseconds
	N      int
}

// Starts returns the starts to record: one per rate limit the claim started jobs under.
func (p *Plan) Starts() []Start {
	var out []Start
	for _, u := range p.limits {
		if n := p.starts[u.Scope][u.Name]; u.Rate > 0 && n > 0 {
			out = append(out, Start{Scope: u.Scope, Name: u.Name, Period: u.Period.Microseconds(), N: n})
		}
	}
	return out
}
