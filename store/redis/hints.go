package redis

import (
	"strings"
	"sync"

	"github.com/rotahq/rota/store"
)

// A completion reads, besides the job's state, fence, cancel request and dependents, its queue,
// kind, owner, workflow and whether it has a unique key or a schedule: what the indexes it
// leaves and the workflow counts it moves are keyed by. Those do not change while a claim
// stands, and the Store that claimed a job nearly always completes it, so Claim keeps them per
// job (claimHints) and Complete sends them with the outcomes of the jobs it finds there, under
// the claim's fence: the script then reads four of the hash's fields rather than eleven, each a
// walk of the hash's entries (~1.5 µs of Redis per completed job in all). An outcome without a
// hint, or with another fence, is read whole as before: the hints are only ever a shortcut.

// claimHint is what a completion of a plain job (no unique key, no schedule) under the claim
// with fence takes from the claim instead of the job's hash.
type claimHint struct {
	fence int64
	hintFields
}

// hintFields are a hint's fields: the complete script takes a run of completions with the same
// ones in one record.
type hintFields struct{ queue, kind, workflow, owner string }

// takenHint is what take found for an outcome.
type takenHint struct {
	hintFields
	ok bool
}

// hintsMax bounds the hints kept: those of jobs this Store claimed and never completed (a lease
// lost, a node stopped mid-run) would otherwise pile up. Reaching it forgets them all.
const hintsMax = 1 << 16

type claimHints struct {
	mu sync.Mutex
	m  map[int64]claimHint
	// names holds one copy of each queue, kind and workflow name the hints hold: a claimed row's
	// fields are cut out of its reply without a copy (claimrow.go), and a hint holding one would
	// keep the whole row, args and errors included, for as long as the job runs.
	names map[string]string
}

// add keeps the hints of the plain jobs among rows, claimed for owner.
func (h *claimHints) add(rows []*store.JobRow, owner string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil || len(h.m)+len(rows) > hintsMax {
		h.m, h.names = make(map[int64]claimHint, len(rows)), make(map[string]string)
	}
	for _, r := range rows {
		if r.UniqueKey == "" && r.Schedule == "" {
			h.m[r.ID] = claimHint{r.Fence, hintFields{h.name(r.Queue), h.name(r.Kind), h.name(r.Workflow), h.name(owner)}}
		}
	}
}

// name is the kept copy of s. h.mu is held. Workflow names are as many as workflows: past
// namesMax the copies start afresh (the hints keep theirs).
func (h *claimHints) name(s string) string {
	if c, ok := h.names[s]; ok {
		return c
	}
	if len(h.names) >= namesMax {
		h.names = make(map[string]string)
	}
	c := strings.Clone(s)
	h.names[c] = c
	return c
}

const namesMax = 4096

// take removes the hints of the outcomes' jobs and returns, per outcome, the fields of its hint
// when that is of the claim with the outcome's fence (ok false when not).
func (h *claimHints) take(outcomes []store.Outcome) []takenHint {
	out := make([]takenHint, len(outcomes))
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, o := range outcomes {
		c, ok := h.m[o.ID]
		if !ok {
			continue
		}
		delete(h.m, o.ID)
		out[i] = takenHint{c.hintFields, c.fence == o.Fence}
	}
	return out
}
