package storetest

import (
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

var completeTests = map[string]func(*testing.T, *env){
	"Completed":        testCompleteCompleted,
	"Retryable":        testCompleteRetryable,
	"Snoozed":          testCompleteSnoozed,
	"HandedBack":       testCompleteHandedBack,
	"HandedBackRunAt":  testCompleteHandedBackRunAt,
	"CancelledDiscard": testCompleteFinalStates,
	"StaleFence":       testCompleteStaleFence,
	"Batch":            testCompleteBatch,
	"CancelRequested":  testCompleteCancelRequested,
	"NulInError":       testCompleteNulInError,
	"InvalidState":     testCompleteInvalidState,
	"ErrorStamped":     testCompleteErrorStamped,
	"ZeroRunAt":        testCompleteZeroRunAt,
	"SeveralOfOneJob":  testCompleteSeveralOfOneJob,
	"KeptAsRead":       testCompleteKeptAsRead,
}

// What an outcome writes is kept as every store keeps it: an attempt's error time to the
// microsecond, given or stamped with the store's clock (then the job's FinalizedAt, as a rescue's
// is), and a Result that is not JSON as a JSON string of its bytes, so that every row encodes.
func testCompleteKeptAsRead(t *testing.T, e *env) {
	e.advance(123456789 * time.Nanosecond) // the store's clock has digits below the microsecond
	given := e.now().Add(-time.Minute + 987*time.Nanosecond).In(time.FixedZone("east", 3600))
	e.insertOne(job("k"))
	c := e.claimOne()
	got := e.completeOK(store.Outcome{ID: c.ID, Fence: c.Fence, State: store.StateDiscarded,
		Error: &store.AttemptError{Error: "given", At: given}})
	wantTime(t, "a given error time", got.Errors[0].At, given.Truncate(time.Microsecond))

	e.insertOne(job("k"))
	c = e.claimOne()
	got = e.completeOK(store.Outcome{ID: c.ID, Fence: c.Fence, State: store.StateDiscarded,
		Error: &store.AttemptError{Error: "stamped"}})
	wantTime(t, "a stamped error time", got.Errors[0].At, e.now().Truncate(time.Microsecond))
	wantTime(t, "FinalizedAt", got.FinalizedAt, got.Errors[0].At)

	p := job("k")
	p.MaxAttempts = 1
	e.insertOne(p)
	e.claimAs("gone", time.Second, 1)
	e.advance(2 * time.Second)
	if rescued := e.rescue(10); len(rescued) != 1 || len(rescued[0].Errors) != 1 {
		t.Errorf("rescued %+v, want the one job with its error", rescued)
	} else {
		wantTime(t, "a rescue's error time", rescued[0].Errors[0].At, rescued[0].FinalizedAt)
	}

	e.insertOne(job("k"))
	c = e.claimOne()
	got = e.completeOK(store.Outcome{ID: c.ID, Fence: c.Fence, State: store.StateCompleted, Result: []byte("plain text")})
	if string(got.Result) != `"plain text"` {
		t.Errorf("a Result that is not JSON is kept as %q, want the JSON string \"plain text\"", got.Result)
	}
}

// A user who cancels a running job gets it cancelled even when the node had already let the job
// go: an outcome that would run it again (retry, snooze, hand-back) ends it cancelled. Final
// outcomes stand.
func testCompleteCancelRequested(t *testing.T, e *env) {
	retry, snooze, back, done := e.insertOne(job("k")), e.insertOne(job("k")), e.insertOne(job("k")), e.insertOne(job("k"))
	claimed := e.claim("default", 4)
	if len(claimed) != 4 {
		t.Fatalf("claimed %d, want 4", len(claimed))
	}
	for _, j := range claimed {
		if got := e.cancel(j.ID); !got.CancelRequested {
			t.Fatalf("cancel of running job %d: %+v", j.ID, got)
		}
	}
	fence := func(id int64) int64 { return e.get(id).Fence }
	applied := e.complete(
		store.Outcome{ID: retry.ID, Fence: fence(retry.ID), State: store.StateRetryable, RunAt: e.now().Add(time.Minute),
			Error: &store.AttemptError{Attempt: 1, At: e.now(), Error: "boom"}},
		store.Outcome{ID: snooze.ID, Fence: fence(snooze.ID), State: store.StateScheduled, RunAt: e.now().Add(time.Hour), RefundAttempt: true},
		store.Outcome{ID: back.ID, Fence: fence(back.ID), State: store.StateAvailable, RefundAttempt: true},
		store.Outcome{ID: done.ID, Fence: fence(done.ID), State: store.StateCompleted},
	)
	for i, ok := range applied {
		if !ok {
			t.Fatalf("outcome %d not applied", i)
		}
	}
	for _, id := range []int64{retry.ID, snooze.ID, back.ID} {
		got := e.get(id)
		wantFinalized(t, got, store.StateCancelled, e.now())
		wantUnclaimed(t, got)
	}
	wantState(t, e.get(done.ID), store.StateCompleted)
	if n := len(e.claim("default", 10)); n != 0 {
		t.Fatalf("claimed %d jobs a user cancelled", n)
	}
	counts := e.stats()["default"].Counts
	if counts[store.StateCancelled] != 3 || counts[store.StateCompleted] != 1 || counts[store.StateRunning] != 0 {
		t.Fatalf("counts %v; want 3 cancelled, 1 completed", counts)
	}
}

// An error text with NUL characters is recorded without them (PostgreSQL cannot keep them), and
// does not keep the outcomes written with it from being recorded.
func testCompleteNulInError(t *testing.T, e *env) {
	a, b := e.insertOne(job("k")), e.insertOne(job("k"))
	ca, cb := e.claimOne(), e.claimOne()
	applied := e.complete(
		store.Outcome{ID: a.ID, Fence: ca.Fence, State: store.StateRetryable, RunAt: e.now().Add(time.Minute),
			Error: &store.AttemptError{Attempt: 1, At: e.now(), Error: "stderr: bin\x00ary", Trace: "frame\x00"}},
		store.Outcome{ID: b.ID, Fence: cb.Fence, State: store.StateCompleted},
	)
	if !applied[0] || !applied[1] {
		t.Fatalf("applied = %v, want both", applied)
	}
	got := e.get(a.ID)
	if len(got.Errors) != 1 || got.Errors[0].Error != "stderr: binary" || got.Errors[0].Trace != "frame" {
		t.Fatalf("errors %+v; want the text without its NUL", got.Errors)
	}
}

func testCompleteCompleted(t *testing.T, e *env) {
	j := e.insertOne(job("k"))
	c := e.claimOne()
	e.advance(time.Second)
	got := e.completeOK(store.Outcome{ID: j.ID, Fence: c.Fence, State: store.StateCompleted, Result: []byte(`{"ok": true}`)})
	wantFinalized(t, got, store.StateCompleted, e.now())
	wantUnclaimed(t, got)
	wantJSON(t, "Result", got.Result, []byte(`{"ok":true}`))
	if got.Attempt != 1 || len(got.Errors) != 0 {
		t.Errorf("attempt %d errors %v; want 1 and none", got.Attempt, got.Errors)
	}
}

// A failed attempt records its error and waits for its retry time; errors accumulate.
func testCompleteRetryable(t *testing.T, e *env) {
	j := e.insertOne(job("k"))
	c := e.claimOne()
	fail := func(attempt int, fence int64, msg string) *store.JobRow {
		return e.completeOK(store.Outcome{
			ID: j.ID, Fence: fence, State: store.StateRetryable, RunAt: e.now().Add(time.Minute),
			Error: &store.AttemptError{Attempt: attempt, At: e.now(), Error: msg, Trace: "stack of " + msg},
		})
	}
	first := e.now()
	got := fail(1, c.Fence, "boom")
	wantState(t, got, store.StateRetryable)
	wantUnclaimed(t, got)
	wantTime(t, "RunAt", got.RunAt, e.now().Add(time.Minute))
	if !got.FinalizedAt.IsZero() {
		t.Errorf("a retryable job has FinalizedAt %v", got.FinalizedAt)
	}
	if n := len(e.claim("default", 1)); n != 0 {
		t.Fatalf("a job retrying in a minute was claimed at once")
	}
	e.advance(time.Minute)
	c = e.claimOne()
	if c.Attempt != 2 {
		t.Fatalf("retry claimed with attempt %d, want 2", c.Attempt)
	}
	got = fail(2, c.Fence, "bang")
	sameErrors(t, got.Errors, []store.AttemptError{
		{Attempt: 1, At: first, Error: "boom", Trace: "stack of boom"},
		{Attempt: 2, At: e.now(), Error: "bang", Trace: "stack of bang"},
	})
}

// A snoozed job is scheduled for later and, with RefundAttempt, has not used a try.
func testCompleteSnoozed(t *testing.T, e *env) {
	j := e.insertOne(job("k"))
	c := e.claimOne()
	got := e.completeOK(store.Outcome{
		ID: j.ID, Fence: c.Fence, State: store.StateScheduled, RunAt: e.now().Add(time.Hour), RefundAttempt: true,
	})
	wantState(t, got, store.StateScheduled)
	wantTime(t, "RunAt", got.RunAt, e.now().Add(time.Hour))
	if got.Attempt != 0 || len(got.Errors) != 0 {
		t.Errorf("snoozed: attempt %d errors %v; want 0 and none", got.Attempt, got.Errors)
	}
	if n := len(e.claim("default", 1)); n != 0 {
		t.Fatal("a snoozed job was claimed before its time")
	}
	e.advance(time.Hour)
	again := e.claimOne()
	if again.Attempt != 1 || again.Fence <= c.Fence {
		t.Errorf("after snooze: attempt %d fence %d; want 1 and > %d", again.Attempt, again.Fence, c.Fence)
	}
}

// A job handed back on shutdown keeps its RunAt (zero Outcome.RunAt), so it is first in line
// again, ahead of jobs inserted after it, and gets its attempt back.
func testCompleteHandedBack(t *testing.T, e *env) {
	j := e.insertOne(job("k"))
	c := e.claimOne()
	e.advance(time.Minute)
	newer := e.insertOne(job("k"))
	got := e.completeOK(store.Outcome{ID: j.ID, Fence: c.Fence, State: store.StateAvailable, RefundAttempt: true})
	wantState(t, got, store.StateAvailable)
	wantTime(t, "RunAt", got.RunAt, j.RunAt)
	if got.Attempt != 0 {
		t.Errorf("handed back with attempt %d, want 0", got.Attempt)
	}
	if next := e.claimOne(); next.ID != j.ID {
		t.Fatalf("claimed %d, want the handed-back job %d before %d", next.ID, j.ID, newer.ID)
	}
}

func testCompleteHandedBackRunAt(t *testing.T, e *env) {
	e.insertOne(job("k"))
	c := e.claimOne()
	at := e.now().Add(-time.Hour)
	got := e.completeOK(store.Outcome{ID: c.ID, Fence: c.Fence, State: store.StateAvailable, RunAt: at})
	wantTime(t, "RunAt", got.RunAt, at)
	if got.Attempt != 1 {
		t.Errorf("handed back without refund: attempt %d, want 1", got.Attempt)
	}
}

func testCompleteFinalStates(t *testing.T, e *env) {
	for _, state := range []store.State{store.StateCancelled, store.StateDiscarded} {
		e.insertOne(job("k"))
		c := e.claimOne()
		e.advance(time.Second)
		got := e.completeOK(store.Outcome{
			ID: c.ID, Fence: c.Fence, State: state,
			Error: &store.AttemptError{Attempt: 1, At: e.now(), Error: "no"},
		})
		wantFinalized(t, got, state, e.now())
		sameErrors(t, got.Errors, []store.AttemptError{{Attempt: 1, At: e.now(), Error: "no"}})
		if n := len(e.claim("default", 1)); n != 0 {
			t.Fatalf("a %s job was claimed again", state)
		}
	}
}

// An outcome with a stale fence, for a job not running, or for an unknown id is not applied and
// changes nothing; the others in the same call are applied.
func testCompleteStaleFence(t *testing.T, e *env) {
	a, b := e.insertOne(job("k")), e.insertOne(job("k"))
	ca, cb := e.claimOne(), e.claimOne()
	if ca.ID != a.ID || cb.ID != b.ID {
		t.Fatalf("claimed %d, %d; want %d, %d", ca.ID, cb.ID, a.ID, b.ID)
	}
	before := e.get(a.ID)
	applied := e.complete(
		store.Outcome{ID: a.ID, Fence: ca.Fence - 1, State: store.StateCompleted},
		store.Outcome{ID: a.ID, Fence: ca.Fence + 1, State: store.StateDiscarded},
		store.Outcome{ID: b.ID, Fence: cb.Fence, State: store.StateCompleted},
		store.Outcome{ID: a.ID + b.ID + 1000, Fence: 1, State: store.StateCompleted},
	)
	if applied[0] || applied[1] || !applied[2] || applied[3] {
		t.Fatalf("applied = %v, want [false false true false]", applied)
	}
	sameJob(t, e.get(a.ID), before)
	// b is completed now: a second outcome with its (once right) fence is stale.
	done := e.get(b.ID)
	if e.complete(store.Outcome{ID: b.ID, Fence: cb.Fence, State: store.StateRetryable, RunAt: e.now()})[0] {
		t.Fatal("an outcome for a completed job was applied")
	}
	sameJob(t, e.get(b.ID), done)
}

func testCompleteBatch(t *testing.T, e *env) {
	ps := make([]store.InsertParams, 250)
	for i := range ps {
		ps[i] = job("k")
	}
	e.insert(ps...)
	var outs []store.Outcome
	for {
		rows := e.claim("default", 100)
		if len(rows) == 0 {
			break
		}
		for _, r := range rows {
			outs = append(outs, store.Outcome{ID: r.ID, Fence: r.Fence, State: store.StateCompleted})
		}
	}
	for i, ok := range e.complete(outs...) {
		if !ok {
			t.Fatalf("outcome %d not applied", i)
		}
	}
	if n := len(e.listAll(store.ListParams{States: []store.State{store.StateCompleted}})); n != len(ps) {
		t.Fatalf("%d completed, want %d", n, len(ps))
	}
}
