package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

// depRaceRounds is how many times each race is run: each round is a few milliseconds.
const depRaceRounds = 40

// LastDepsRace ends the last two dependencies of a job at the same moment, through two handles
// on one store's data when given two (nodes sharing a database): the dependent is released once,
// never left pending and never released twice. A store's own tests call it with several handles;
// the suite calls it with one.
func LastDepsRace(t *testing.T, stores ...store.Store) {
	ctx := t.Context()
	s0 := stores[0]
	for round := range depRaceRounds {
		q := raceQueue("last", round)
		res, err := s0.Insert(ctx, []store.InsertParams{inQueue(q), inQueue(q), withDeps(inQueue(q), 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		claimed, err := s0.Claim(ctx, store.ClaimParams{Queue: q, Kinds: kinds, Max: 2, Owner: "node", LeaseFor: time.Minute})
		if err != nil || len(claimed) != 2 {
			t.Fatalf("claim: %d jobs, %v", len(claimed), err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, c := range claimed {
			s := stores[i%len(stores)]
			wg.Go(func() {
				_, errs[i] = s.Complete(ctx, []store.Outcome{{ID: c.ID, Fence: c.Fence, State: store.StateCompleted}})
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		wantReleased(t, s0, q, res[2].Job.ID)
	}
}

// InsertDepRace inserts a job waiting for one whose attempt completes at the same moment,
// through two handles when given two: whichever commits first, the new job is never left
// waiting for a job that has completed.
func InsertDepRace(t *testing.T, stores ...store.Store) {
	ctx := t.Context()
	s0 := stores[0]
	for round := range depRaceRounds {
		q := raceQueue("insert", round)
		res, err := s0.Insert(ctx, []store.InsertParams{inQueue(q)})
		if err != nil {
			t.Fatal(err)
		}
		dep := res[0].Job.ID
		claimed, err := s0.Claim(ctx, store.ClaimParams{Queue: q, Kinds: kinds, Max: 1, Owner: "node", LeaseFor: time.Minute})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim: %d jobs, %v", len(claimed), err)
		}
		var wg sync.WaitGroup
		var completeErr, insertErr error
		var dependent int64
		wg.Go(func() {
			_, completeErr = s0.Complete(ctx, []store.Outcome{{ID: dep, Fence: claimed[0].Fence, State: store.StateCompleted}})
		})
		wg.Go(func() {
			p := inQueue(q)
			p.DependsOn = []int64{dep}
			r, err := stores[1%len(stores)].Insert(ctx, []store.InsertParams{p})
			if insertErr = err; err == nil {
				dependent = r[0].Job.ID
			}
		})
		wg.Wait()
		if completeErr != nil || insertErr != nil {
			t.Fatalf("complete: %v; insert: %v", completeErr, insertErr)
		}
		wantReleased(t, s0, q, dependent)
	}
}

// wantReleased checks that job id of queue q is available, the one claimable job of q, and
// counted as such.
func wantReleased(t *testing.T, s store.Store, q string, id int64) {
	t.Helper()
	j, err := s.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != store.StateAvailable {
		t.Fatalf("queue %s: dependent %d is %s after its dependencies completed, want available", q, id, j.State)
	}
	claimed, err := s.Claim(t.Context(), store.ClaimParams{Queue: q, Kinds: kinds, Max: 5, Owner: "node", LeaseFor: time.Minute})
	if err != nil || len(claimed) != 1 || claimed[0].ID != id {
		t.Fatalf("queue %s: claimed %v (%v), want only %d", q, ids(claimed), err, id)
	}
	stats, err := s.QueueStats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, qs := range stats {
		if qs.Queue == q && (qs.Counts[store.StatePending] != 0 || qs.Counts[store.StateRunning] != 1) {
			t.Fatalf("queue %s: counts %v, want none pending and one running", q, qs.Counts)
		}
	}
}

func withDeps(p store.InsertParams, idx ...int) store.InsertParams {
	p.DependsOnIndex = idx
	return p
}

// raceQueue is the queue of one round of a race, so that rounds and races do not count each
// other's jobs.
func raceQueue(race string, round int) string { return fmt.Sprintf("%s-%d", race, round) }
