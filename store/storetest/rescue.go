package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

var rescueTests = map[string]func(*testing.T, *env){
	"HeartbeatExtendsOwnJobs":    testHeartbeatExtends,
	"HeartbeatReportsCancel":     testHeartbeatCancel,
	"RescueAfterExpiry":          testRescue,
	"RescueDiscardsWhenUsedUp":   testRescueDiscards,
	"RescueLimit":                testRescueLimit,
	"HeartbeatPreventsRescue":    testHeartbeatPreventsRescue,
	"LostLeaseCannotComplete":    testLostLeaseCannotComplete,
	"RescueLeavesOtherJobsAlone": testRescueLeavesOthers,
	"RescueCancelRequested":      testRescueCancelRequested,
	"RescueOldestLeaseFirst":     testRescueOldestFirst,
}

// A rescue that cannot take every lost job takes those whose lease expired first.
func testRescueOldestFirst(t *testing.T, e *env) {
	e.insert(job("k"), job("k"), job("k"))
	late := e.claimAs("a", 20*time.Second, 1)[0]
	early := e.claimAs("b", 10*time.Second, 1)[0]
	middle := e.claimAs("c", 15*time.Second, 1)[0]
	e.advance(time.Minute)
	var got []int64
	for range 3 {
		got = append(got, ids(e.rescue(1))...)
	}
	if want := []int64{early.ID, middle.ID, late.ID}; !slices.Equal(got, want) {
		t.Fatalf("rescued %v one by one, want %v: oldest lease first", got, want)
	}
}

// A job a user asked to cancel while it ran, whose node then died, is rescued cancelled, not
// retried, whether it had attempts left or not (store.RescueState).
func testRescueCancelRequested(t *testing.T, e *env) {
	left, last := job("k"), job("k")
	last.MaxAttempts = 1
	e.insert(left, last)
	claimed := e.claimAs("dead", time.Second, 2)
	for _, c := range claimed {
		e.cancel(c.ID)
	}
	e.advance(time.Minute)
	if got := e.rescue(10); len(got) != 2 {
		t.Fatalf("rescued %d, want 2", len(got))
	}
	for _, c := range claimed {
		got := e.get(c.ID)
		wantFinalized(t, got, store.StateCancelled, e.now())
		wantUnclaimed(t, got)
		sameErrors(t, got.Errors, []store.AttemptError{{Attempt: 1, At: e.now(), Error: store.RescueError("dead")}})
	}
	if counts := e.stats()["default"].Counts; counts[store.StateCancelled] != 2 || counts[store.StateRunning] != 0 {
		t.Fatalf("counts %v; want 2 cancelled", counts)
	}
}

func (e *env) claimAs(owner string, lease time.Duration, max int) []*store.JobRow {
	e.t.Helper()
	return e.claimParams(store.ClaimParams{Queue: "default", Kinds: kinds, Max: max, Owner: owner, LeaseFor: lease})
}

func (e *env) heartbeat(owner string, lease time.Duration) []int64 {
	e.t.Helper()
	ids, err := e.s.Heartbeat(e.ctx, owner, lease)
	if err != nil {
		e.t.Fatalf("Heartbeat(%s): %v", owner, err)
	}
	return ids
}

func (e *env) rescue(limit int) []*store.JobRow {
	e.t.Helper()
	rows, err := e.s.Rescue(e.ctx, limit)
	if err != nil {
		e.t.Fatalf("Rescue: %v", err)
	}
	return rows
}

// Heartbeat extends the leases of the owner's running jobs only.
func testHeartbeatExtends(t *testing.T, e *env) {
	e.insert(job("k"), job("k"), job("k"), job("k"))
	mine := e.claimAs("a", 30*time.Second, 2)
	theirs := e.claimAs("b", 30*time.Second, 1)
	done := e.claimAs("a", 30*time.Second, 1)[0]
	e.completeOK(store.Outcome{ID: done.ID, Fence: done.Fence, State: store.StateCompleted})
	doneBefore := e.get(done.ID)

	e.advance(10 * time.Second)
	if got := e.heartbeat("a", time.Minute); len(got) != 0 {
		t.Errorf("Heartbeat reported cancel requests %v, want none", got)
	}
	for _, j := range mine {
		got := e.get(j.ID)
		wantTime(t, "LeaseUntil of a's job", got.LeaseUntil, e.now().Add(time.Minute))
		if got.Fence != j.Fence || got.State != store.StateRunning {
			t.Errorf("heartbeat changed job %d: %+v", j.ID, got)
		}
	}
	wantTime(t, "LeaseUntil of b's job", e.get(theirs[0].ID).LeaseUntil, theirs[0].LeaseUntil)
	sameJob(t, e.get(done.ID), doneBefore)
}

func testHeartbeatCancel(t *testing.T, e *env) {
	e.insert(job("k"), job("k"), job("k"))
	a := e.claimAs("a", time.Minute, 2)
	b := e.claimAs("b", time.Minute, 1)
	for _, id := range []int64{a[1].ID, b[0].ID} {
		if _, err := e.s.Cancel(e.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.heartbeat("a", time.Minute); !slices.Equal(got, []int64{a[1].ID}) {
		t.Errorf("Heartbeat(a) = %v, want [%d]", got, a[1].ID)
	}
	if got := e.heartbeat("b", time.Minute); !slices.Equal(got, []int64{b[0].ID}) {
		t.Errorf("Heartbeat(b) = %v, want [%d]", got, b[0].ID)
	}
}

// A job whose lease expired goes back to the queue, due at once, with an error for the lost
// attempt; not a moment before the lease ends.
func testRescue(t *testing.T, e *env) {
	j := e.insertOne(job("k"))
	c := e.claimAs("dead", 30*time.Second, 1)[0]
	e.advance(29 * time.Second)
	if got := e.rescue(10); len(got) != 0 {
		t.Fatalf("rescued %v before the lease expired", ids(got))
	}
	e.advance(2 * time.Second)
	got := e.rescue(10)
	if len(got) != 1 || got[0].ID != j.ID {
		t.Fatalf("rescued %v, want [%d]", ids(got), j.ID)
	}
	r := e.get(j.ID)
	sameJob(t, got[0], r)
	wantState(t, r, store.StateRetryable)
	wantUnclaimed(t, r)
	wantTime(t, "RunAt", r.RunAt, e.now())
	if !r.FinalizedAt.IsZero() {
		t.Errorf("a rescued retryable job has FinalizedAt %v", r.FinalizedAt)
	}
	sameErrors(t, r.Errors, []store.AttemptError{{Attempt: 1, At: e.now(), Error: store.RescueError("dead")}})
	again := e.claimOne()
	if again.ID != j.ID || again.Attempt != 2 || again.Fence <= c.Fence {
		t.Errorf("reclaimed %+v; want job %d, attempt 2, fence > %d", again, j.ID, c.Fence)
	}
	if got := e.rescue(10); len(got) != 0 {
		t.Errorf("rescued again at once: %v", ids(got))
	}
}

func testRescueDiscards(t *testing.T, e *env) {
	p := job("k")
	p.MaxAttempts = 1
	j := e.insertOne(p)
	e.claimAs("dead", time.Second, 1)
	e.advance(time.Minute)
	got := e.rescue(10)
	if len(got) != 1 {
		t.Fatalf("rescued %d, want 1", len(got))
	}
	r := e.get(j.ID)
	wantFinalized(t, r, store.StateDiscarded, e.now())
	wantUnclaimed(t, r)
	sameErrors(t, r.Errors, []store.AttemptError{{Attempt: 1, At: e.now(), Error: store.RescueError("dead")}})
}

func testRescueLimit(t *testing.T, e *env) {
	e.insert(job("k"), job("k"), job("k"))
	e.claimAs("dead", time.Second, 3)
	e.advance(time.Minute)
	if got := e.rescue(2); len(got) != 2 {
		t.Fatalf("Rescue(2) took %d", len(got))
	}
	if got := e.rescue(2); len(got) != 1 {
		t.Fatalf("then Rescue(2) took %d, want the 1 left", len(got))
	}
}

func testHeartbeatPreventsRescue(t *testing.T, e *env) {
	j := e.insertOne(job("k"))
	e.claimAs("alive", 30*time.Second, 1)
	for range 5 {
		e.advance(20 * time.Second)
		e.heartbeat("alive", 30*time.Second)
		if got := e.rescue(10); len(got) != 0 {
			t.Fatalf("rescued a job whose lease is renewed: %v", ids(got))
		}
	}
	wantState(t, e.get(j.ID), store.StateRunning)
}

// A node that lost its lease cannot record an outcome over the job's new owner.
func testLostLeaseCannotComplete(t *testing.T, e *env) {
	e.insertOne(job("k"))
	old := e.claimAs("slow", time.Second, 1)[0]
	e.advance(time.Minute)
	e.rescue(10)
	cur := e.claimAs("new", time.Minute, 1)[0]
	if e.complete(store.Outcome{ID: old.ID, Fence: old.Fence, State: store.StateCompleted})[0] {
		t.Fatal("the old owner's outcome was applied")
	}
	got := e.get(cur.ID)
	if got.State != store.StateRunning || got.Owner != "new" || got.Fence != cur.Fence {
		t.Fatalf("job after stale outcome: %+v", got)
	}
}

func testRescueLeavesOthers(t *testing.T, e *env) {
	e.insert(job("k"), job("k"))
	p := job("k")
	p.RunAt = e.now().Add(time.Minute)
	sched := e.insertOne(p)
	done := e.claimAs("a", time.Second, 1)[0]
	e.completeOK(store.Outcome{ID: done.ID, Fence: done.Fence, State: store.StateCompleted})
	e.advance(time.Hour)
	if got := e.rescue(10); len(got) != 0 {
		t.Fatalf("rescued jobs that were not running: %v", ids(got))
	}
	wantState(t, e.get(sched.ID), store.StateScheduled)
	wantState(t, e.get(done.ID), store.StateCompleted)
}
