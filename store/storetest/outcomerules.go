package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

// The rules every store applies to an outcome before it writes it (package store's Outcome and
// Complete): which states are outcomes, what the store fills in, the order of one job's
// outcomes.

// An outcome in a state no attempt ends in is refused, and nothing of the call is applied: a
// store that wrote it would leave a job running with no owner, or expired after it ran.
func testCompleteInvalidState(t *testing.T, e *env) {
	e.insert(job("k"), job("k"))
	a, b := e.claimOne(), e.claimOne()
	for _, bad := range []store.State{store.StateRunning, store.StateExpired, "done"} {
		applied, err := e.s.Complete(e.ctx, []store.Outcome{
			{ID: a.ID, Fence: a.Fence, State: store.StateCompleted},
			{ID: b.ID, Fence: b.Fence, State: bad},
		})
		if err == nil {
			t.Fatalf("Complete with state %q: applied %v, want an error", bad, applied)
		}
	}
	for _, j := range []*store.JobRow{a, b} {
		got := e.get(j.ID)
		if got.State != store.StateRunning || got.Owner != j.Owner || got.Fence != j.Fence {
			t.Fatalf("job %d after refused outcomes: %+v", j.ID, got)
		}
	}
}

// An error is recorded with the attempt of the claim it ends, whatever the caller said, and with
// the store's time when it came without one.
func testCompleteErrorStamped(t *testing.T, e *env) {
	e.insertOne(job("k"))
	c := e.claimOne()
	e.completeOK(store.Outcome{ID: c.ID, Fence: c.Fence, State: store.StateRetryable, RunAt: e.now(),
		Error: &store.AttemptError{Error: "no attempt, no time"}})
	e.advance(time.Second)
	c = e.claimOne()
	at := e.now().Add(-time.Minute)
	got := e.completeOK(store.Outcome{ID: c.ID, Fence: c.Fence, State: store.StateDiscarded,
		Error: &store.AttemptError{Attempt: 99, At: at, Error: "a wrong attempt"}})
	sameErrors(t, got.Errors, []store.AttemptError{
		{Attempt: 1, At: e.now().Add(-time.Second), Error: "no attempt, no time"},
		{Attempt: 2, At: at, Error: "a wrong attempt"},
	})
}

// A retryable or scheduled outcome without a RunAt makes the job due now; a final outcome keeps
// the job's RunAt, whatever it carries.
func testCompleteZeroRunAt(t *testing.T, e *env) {
	for _, state := range []store.State{store.StateRetryable, store.StateScheduled} {
		e.insertOne(job("k"))
		c := e.claimOne()
		e.advance(time.Minute)
		got := e.completeOK(store.Outcome{ID: c.ID, Fence: c.Fence, State: state})
		wantState(t, got, state)
		wantTime(t, string(state)+" RunAt", got.RunAt, e.now())
		again := e.claimOne()
		if again.ID != c.ID {
			t.Fatalf("claimed %d, want the %s job %d due now", again.ID, state, c.ID)
		}
		e.completeOK(store.Outcome{ID: c.ID, Fence: again.Fence, State: store.StateCompleted,
			RunAt: e.now().Add(time.Hour)})
		wantTime(t, "completed RunAt", e.get(c.ID).RunAt, got.RunAt)
	}
}

// Several outcomes of one job in one call are applied in their order: the first that holds the
// job's fence wins, and those after it find the job no longer running.
func testCompleteSeveralOfOneJob(t *testing.T, e *env) {
	a, b := e.insertOne(job("k")), e.insertOne(job("k"))
	ca, cb := e.claimOne(), e.claimOne()
	if ca.ID != a.ID || cb.ID != b.ID {
		t.Fatalf("claimed %d, %d; want %d, %d", ca.ID, cb.ID, a.ID, b.ID)
	}
	applied := e.complete(
		store.Outcome{ID: a.ID, Fence: ca.Fence - 1, State: store.StateDiscarded},
		store.Outcome{ID: b.ID, Fence: cb.Fence, State: store.StateCompleted},
		store.Outcome{ID: a.ID, Fence: ca.Fence, State: store.StateCompleted, Result: []byte(`1`)},
		store.Outcome{ID: a.ID, Fence: ca.Fence, State: store.StateCancelled},
	)
	if want := []bool{false, true, true, false}; !slices.Equal(applied, want) {
		t.Fatalf("applied = %v, want %v", applied, want)
	}
	got := e.get(a.ID)
	wantState(t, got, store.StateCompleted)
	wantJSON(t, "Result", got.Result, []byte(`1`))
	if counts := e.stats()["default"].Counts; counts[store.StateCompleted] != 2 || counts[store.StateRunning] != 0 {
		t.Fatalf("counts %v; want 2 completed", counts)
	}
}
