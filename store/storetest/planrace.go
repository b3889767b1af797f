package storetest

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

func testSchedulePlanRace(t *testing.T, e *env) { PlanRace(t, e.s) }

// PlanRace has 8 planners race to plan one schedule from the same `from`, in two rounds (from
// the zero time, then from the first round's `to`), spread over stores, which must be handles on
// one store's data (processes sharing a file, nodes sharing a database): each round exactly one
// wins, and its jobs are inserted once. The jobs have no unique key, so only PlanSchedule's
// compare-and-set keeps them single. A store's own tests call it with several handles; the suite
// calls it with one.
func PlanRace(t *testing.T, stores ...store.Store) {
	const planners = 8
	ctx := t.Context()
	if _, err := stores[0].UpsertSchedule(ctx, cronSchedule("race")); err != nil {
		t.Fatal(err)
	}
	var from time.Time
	for round := range 2 {
		to := epoch.Add(time.Duration(round+1) * time.Minute)
		jobs := []store.InsertParams{occurrence("race", to.Add(-time.Second)), occurrence("race", to)}
		var wins atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for p := range planners {
			s := stores[p%len(stores)]
			wg.Go(func() {
				<-start
				planned, err := s.PlanSchedule(ctx, "race", from, to, jobs)
				if err != nil {
					t.Errorf("PlanSchedule: %v", err)
				}
				if planned {
					wins.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		if n := wins.Load(); n != 1 {
			t.Fatalf("round %d: %d of %d planners won, want 1", round, n, planners)
		}
		if n := countPlanned(t, stores[0], "race"); n != 2*(round+1) {
			t.Fatalf("round %d: %d jobs, want %d", round, n, 2*(round+1))
		}
		sc, err := stores[0].GetSchedule(ctx, "race")
		if err != nil {
			t.Fatal(err)
		}
		wantTime(t, "LastPlanned", sc.LastPlanned, to)
		from = to
	}
}

// countPlanned counts the jobs that name schedule name.
func countPlanned(t *testing.T, s store.Store, name string) int {
	t.Helper()
	n := 0
	for p := (store.ListParams{Limit: 100}); ; {
		page, err := s.List(t.Context(), p)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(page) == 0 {
			return n
		}
		for _, j := range page {
			if j.Schedule == name {
				n++
			}
		}
		p.AfterID = page[len(page)-1].ID
	}
}
