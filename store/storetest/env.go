package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
)

// epoch is where every test's fake clock starts: a whole second, so that times survive any store's
// precision.
var epoch = time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)

// kinds is what the helpers claim: every kind the suite inserts, unless a test says otherwise.
var kinds = []string{"k", "a", "b"}

// env is what one test needs: a fresh store, its fake clock, and helpers that fail the test on
// any unexpected error.
type env struct {
	t   *testing.T
	ctx context.Context
	s   store.Store
	clk *clockwork.FakeClock
}

func newEnv(t *testing.T, open Opener) *env {
	clk := clockwork.NewFakeClockAt(epoch)
	return &env{t: t, ctx: t.Context(), s: open(t, clk), clk: clk}
}

func (e *env) now() time.Time { return e.clk.Now() }

func (e *env) advance(d time.Duration) { e.clk.Advance(d) }

// job returns valid insert params of kind k in queue "default", as the runtime would pass them.
func job(kind string) store.InsertParams {
	return store.InsertParams{Kind: kind, Queue: "default", Args: []byte(`{"n":1}`), MaxAttempts: 3}
}

// inQueue returns job("k") in queue q.
func inQueue(q string) store.InsertParams {
	p := job("k")
	p.Queue = q
	return p
}

func (e *env) insertResults(ps ...store.InsertParams) []store.InsertResult {
	e.t.Helper()
	res, err := e.s.Insert(e.ctx, ps)
	if err != nil {
		e.t.Fatalf("Insert: %v", err)
	}
	if len(res) != len(ps) {
		e.t.Fatalf("Insert returned %d results for %d params", len(res), len(ps))
	}
	return res
}

func (e *env) insert(ps ...store.InsertParams) []*store.JobRow {
	e.t.Helper()
	var rows []*store.JobRow
	for _, r := range e.insertResults(ps...) {
		if r.Job == nil {
			e.t.Fatal("Insert returned a result without a job")
		}
		rows = append(rows, r.Job)
	}
	return rows
}

func (e *env) insertOne(p store.InsertParams) *store.JobRow {
	e.t.Helper()
	return e.insert(p)[0]
}

// failedJob inserts a job and cancels it: a dependency that has failed.
func (e *env) failedJob() *store.JobRow {
	e.t.Helper()
	j := e.insertOne(job("k"))
	e.cancel(j.ID)
	return j
}

func (e *env) get(id int64) *store.JobRow {
	e.t.Helper()
	j, err := e.s.Get(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Get(%d): %v", id, err)
	}
	return j
}

func (e *env) claimParams(p store.ClaimParams) []*store.JobRow {
	e.t.Helper()
	rows, err := e.s.Claim(e.ctx, p)
	if err != nil {
		e.t.Fatalf("Claim(%+v): %v", p, err)
	}
	if len(rows) > max(p.Max, 0) {
		e.t.Fatalf("Claim(Max %d) returned %d jobs", p.Max, len(rows))
	}
	return rows
}

// claim takes up to max jobs of queue as owner "node-1" with a 30 s lease.
func (e *env) claim(queue string, max int) []*store.JobRow {
	e.t.Helper()
	return e.claimParams(store.ClaimParams{
		Queue: queue, Kinds: kinds, Max: max, Owner: "node-1", LeaseFor: 30 * time.Second,
	})
}

// claimOne claims the one job it expects in queue "default".
func (e *env) claimOne() *store.JobRow {
	e.t.Helper()
	rows := e.claim("default", 1)
	if len(rows) != 1 {
		e.t.Fatalf("Claim: got %d jobs, want 1", len(rows))
	}
	return rows[0]
}

func (e *env) complete(outcomes ...store.Outcome) []bool {
	e.t.Helper()
	applied, err := e.s.Complete(e.ctx, outcomes)
	if err != nil {
		e.t.Fatalf("Complete: %v", err)
	}
	if len(applied) != len(outcomes) {
		e.t.Fatalf("Complete returned %d flags for %d outcomes", len(applied), len(outcomes))
	}
	return applied
}

// completeOK records one outcome and fails the test if it was not applied.
func (e *env) completeOK(o store.Outcome) *store.JobRow {
	e.t.Helper()
	if !e.complete(o)[0] {
		e.t.Fatalf("Complete(%+v) not applied", o)
	}
	return e.get(o.ID)
}

func (e *env) list(p store.ListParams) []*store.JobRow {
	e.t.Helper()
	rows, err := e.s.List(e.ctx, p)
	if err != nil {
		e.t.Fatalf("List(%+v): %v", p, err)
	}
	return rows
}

// listAll pages through every job matching p, checking that pages do not overlap.
func (e *env) listAll(p store.ListParams) []*store.JobRow {
	e.t.Helper()
	var all []*store.JobRow
	for {
		page := e.list(p)
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		p.AfterID = page[len(page)-1].ID
	}
}

func ids(rows []*store.JobRow) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
