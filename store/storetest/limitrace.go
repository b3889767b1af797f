package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

func testLimitConcurrent(t *testing.T, e *env) { LimitRace(t, e.s) }

// LimitRace has 8 claimers race on a queue limited to 3 running jobs, spread over stores, which
// must be handles on one store's data (processes sharing a file, nodes sharing a database):
// never more than 3 run, and together the claimers run every job. Each claimer counts the jobs
// it holds before it records their outcomes, so the sum of what claimers hold is never more than
// what the store has running; after each claim a claimer also counts the running jobs with List.
// A store's own tests call it with several handles; the suite calls it with one.
func LimitRace(t *testing.T, stores ...store.Store) {
	const jobs, claimers, limit = 60, 8, 3
	ctx := t.Context()
	if err := stores[0].SetLimit(ctx, store.Limit{Scope: store.LimitQueue, Name: "race", MaxRunning: limit}); err != nil {
		t.Fatal(err)
	}
	ps := make([]store.InsertParams, jobs)
	for i := range ps {
		ps[i] = inQueue("race")
	}
	if _, err := stores[0].Insert(ctx, ps); err != nil {
		t.Fatal(err)
	}

	var held, finished, worst atomic.Int64
	errs := make(chan error, claimers)
	var wg sync.WaitGroup
	for c := range claimers {
		s := stores[c%len(stores)]
		wg.Go(func() {
			for round := 0; finished.Load() < jobs; round++ {
				if round == 100_000 {
					errs <- fmt.Errorf("node-%d: %d jobs finished after %d rounds", c, finished.Load(), round)
					return
				}
				rows, err := s.Claim(ctx, store.ClaimParams{
					Queue: "race", Kinds: kinds, Max: 10, Owner: fmt.Sprint("node-", c), LeaseFor: time.Minute,
				})
				if err != nil {
					errs <- err
					return
				}
				raise(&worst, held.Add(int64(len(rows))))
				running, err := s.List(ctx, store.ListParams{States: []store.State{store.StateRunning}, Queue: "race"})
				if err != nil {
					errs <- err
					return
				}
				raise(&worst, int64(len(running)))
				if len(rows) == 0 {
					continue
				}
				held.Add(-int64(len(rows)))
				outs := make([]store.Outcome, len(rows))
				for i, r := range rows {
					outs[i] = store.Outcome{ID: r.ID, Fence: r.Fence, State: store.StateCompleted}
				}
				if _, err := s.Complete(ctx, outs); err != nil {
					errs <- err
					return
				}
				finished.Add(int64(len(rows)))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if w := worst.Load(); w > limit {
		t.Fatalf("%d jobs ran at once under MaxRunning %d", w, limit)
	}
	if n := finished.Load(); n != jobs {
		t.Fatalf("%d jobs completed, want %d", n, jobs)
	}
}

// raise sets m to n if n is larger.
func raise(m *atomic.Int64, n int64) {
	for {
		old := m.Load()
		if n <= old || m.CompareAndSwap(old, n) {
			return
		}
	}
}
