package storetest

import (
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

// keyMoveTests move jobs into states that hold their unique key while another job holds it, or
// while another job of the same call moves into it too: the move must happen, the key staying
// with one job, never fail (a claim that failed on such a job failed on every claim of its
// queue after it).
var keyMoveTests = map[string]func(*testing.T, *env){
	"CancelKeyHeldElsewhere":    testCancelKeyHeldElsewhere,
	"ExpireKeyHeldElsewhere":    testExpireKeyHeldElsewhere,
	"PromoteSharedKey":          testPromoteSharedKey,
	"RetryWorkflowSharedKey":    testRetryWorkflowSharedKey,
	"SupersedeExistingInCall":   testSupersedeExistingInCall,
	"DuplicateThenSuperseded":   testDuplicateThenSuperseded,
	"RetriedGivesKeyUp":         testRetriedGivesKeyUp,
	"KeyHeldDependencyFailed":   testKeyHeldDependencyFailed,
	"KeyHeldInCallDepFailed":    testKeyHeldInCallDepFailed,
	"KeyTakenInCallBySupersede": testKeyTakenInCallBySupersede,
	"KeyHeldInCallLaterGen":     testKeyHeldInCallLaterGen,
	"SupersedeChainInCall":      testSupersedeChainInCall,
	"CompleteSharedKey":         testCompleteSharedKey,
	"RescueSharedKey":           testRescueSharedKey,
	"CompleteStalePeer":         testCompleteStalePeer,
	"ReleasedThenSuperseded":    testReleasedThenSupersededCounts,
}

// Jobs whose key is held only once they have ended (UniqueStates completed and cancelled) can be
// inserted while one waits, and each can be cancelled: the second gives its key up, as a second
// completion does.
func testCancelKeyHeldElsewhere(t *testing.T, e *env) {
	p := job("k")
	p.UniqueKey, p.UniqueStates = "u", []store.State{store.StateCompleted, store.StateCancelled}
	a := e.insertOne(p)
	b := e.insertResults(p)[0]
	if b.Duplicate {
		t.Fatalf("b is a duplicate of %d (%s)", b.Job.ID, b.Job.State)
	}
	e.cancel(a.ID)
	got, err := e.s.Cancel(e.ctx, b.Job.ID)
	if err != nil {
		t.Fatalf("Cancel(b): %v", err)
	}
	wantState(t, got, store.StateCancelled)
}

// The same for a job a claim finds expired: a waits (available, which does not hold the key)
// while b, scheduled, holds it; a expires, a state that would hold it. The claim ends a and
// takes the queue's other job, and so does the next claim.
func testExpireKeyHeldElsewhere(t *testing.T, e *env) {
	states := []store.State{store.StateScheduled, store.StateExpired}
	a := job("k")
	a.UniqueKey, a.UniqueStates, a.ExpiresAt = "u", states, e.now().Add(time.Minute)
	ra := e.insertOne(a)
	b := job("k")
	b.UniqueKey, b.UniqueStates, b.RunAt = "u", states, e.now().Add(time.Hour)
	if rb := e.insertResults(b)[0]; rb.Duplicate {
		t.Fatalf("b is a duplicate of %d (%s)", rb.Job.ID, rb.Job.State)
	}
	e.advance(2 * time.Minute)
	other := e.insertOne(job("k"))
	for try := range 2 {
		got, err := e.s.Claim(e.ctx, store.ClaimParams{Queue: "default", Kinds: kinds, Max: 10, Owner: "n", LeaseFor: time.Minute})
		if err != nil {
			t.Fatalf("Claim (try %d): %v", try, err)
		}
		if try == 0 && (len(got) != 1 || got[0].ID != other.ID) {
			t.Errorf("claimed %v, want %d", ids(got), other.ID)
		}
	}
	wantState(t, e.get(ra.ID), store.StateExpired)
}

// Two delayed jobs that share a key but hold it only once available (UniqueStates names
// available, not scheduled) come due together: one claim makes both available and takes them.
func testPromoteSharedKey(t *testing.T, e *env) {
	for range 2 {
		p := job("k")
		p.UniqueKey, p.UniqueStates, p.RunAt = "u", []store.State{store.StateAvailable}, e.now().Add(time.Second)
		if r := e.insertResults(p)[0]; r.Duplicate {
			t.Fatalf("a duplicate of %d", r.Job.ID)
		}
	}
	e.advance(2 * time.Second)
	got, err := e.s.Claim(e.ctx, store.ClaimParams{Queue: "default", Kinds: kinds, Max: 10, Owner: "n", LeaseFor: time.Minute})
	wantBoth(t, "Claim", got, err)
}

// wantBoth fails the test unless a call that moves two jobs of one key moved both.
func wantBoth(t *testing.T, call string, got []*store.JobRow, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", call, err)
	}
	if len(got) != 2 {
		t.Errorf("%s returned %v, want both jobs", call, ids(got))
	}
}

// Two steps of a workflow that share a key, both failed (the key was free again when the second
// was inserted), run again together.
func testRetryWorkflowSharedKey(t *testing.T, e *env) {
	a := wfStep("a")
	a.UniqueKey = "u"
	ra := e.insertOne(a)
	e.finish(ra.ID, store.StateDiscarded)
	b := wfStep("b")
	b.UniqueKey = "u"
	rb := e.insertResults(b)[0]
	if rb.Duplicate {
		t.Fatalf("b is a duplicate of %d", rb.Job.ID)
	}
	e.finish(rb.Job.ID, store.StateDiscarded)
	got, err := e.s.RetryWorkflow(e.ctx, "wf")
	wantBoth(t, "RetryWorkflow", got, err)
}

// A job of a call that waits for an existing job which a later job of the call supersedes ends
// cancelled with it, one that ignores failed dependencies runs, and a duplicate found before the
// supersede names its holder as it now is: Insert returns each as the store holds it.
func testSupersedeExistingInCall(t *testing.T, e *env) {
	held := job("k")
	held.UniqueKey = "u"
	h := e.insertOne(held)
	waits := after(h.ID)
	ignores := after(h.ID)
	ignores.IgnoreFailedDeps = true
	replaces := held
	replaces.Supersede = true
	res := e.insertResults(waits, ignores, held, replaces)
	wantState(t, e.get(h.ID), store.StateCancelled)
	if !res[2].Duplicate || res[2].Job.ID != h.ID {
		t.Fatalf("third of the call: duplicate %v of %d, want of %d", res[2].Duplicate, res[2].Job.ID, h.ID)
	}
	for i, want := range []store.State{store.StateCancelled, store.StateAvailable, store.StateCancelled, store.StateAvailable} {
		if got := e.get(res[i].Job.ID).State; got != want {
			t.Errorf("job %d of the call is %s, want %s", i, got, want)
		}
		if res[i].Job.State != want {
			t.Errorf("job %d of the call: Insert returned it %s, want %s", i, res[i].Job.State, want)
		}
	}
	counts := e.stats()["default"].Counts
	if counts[store.StateCancelled] != 2 || counts[store.StateAvailable] != 2 || counts[store.StatePending] != 0 {
		t.Errorf("queue counts %v, want 2 cancelled and 2 available", counts)
	}
}

// A call that finds a job holding a key (a duplicate) and then supersedes that job returns the
// duplicate's job as it now is, cancelled.
func testDuplicateThenSuperseded(t *testing.T, e *env) {
	p := job("k")
	p.UniqueKey = "u"
	h := e.insertOne(p)
	sup := p
	sup.Supersede = true
	res := e.insertResults(p, sup)
	if !res[0].Duplicate || res[0].Job.ID != h.ID {
		t.Fatalf("first of the call: duplicate %v of %d, want of %d", res[0].Duplicate, res[0].Job.ID, h.ID)
	}
	wantState(t, e.get(h.ID), store.StateCancelled)
	if res[0].Job.State != store.StateCancelled {
		t.Errorf("Insert returned the duplicate %s, want cancelled as it is", res[0].Job.State)
	}
}

// A job retried while another job holds its key gives the key up, as a superseded running job
// does: two jobs never hold one key, and a later supersede of the key cancels the holder, not
// the retried job.
func testRetriedGivesKeyUp(t *testing.T, e *env) {
	p := job("k")
	p.UniqueKey = "u"
	a := e.insertOne(p)
	e.cancel(a.ID)
	b := e.insertResults(p)[0]
	if b.Duplicate {
		t.Fatalf("b is a duplicate of %d", b.Job.ID)
	}
	e.retry(a.ID)
	p.Supersede = true
	if c := e.insertResults(p)[0]; c.Duplicate {
		t.Fatalf("c is a duplicate of %d", c.Job.ID)
	}
	wantState(t, e.get(b.Job.ID), store.StateCancelled)
	wantState(t, e.get(a.ID), store.StateAvailable)
}

// An insert whose key another job holds is a duplicate of that job, even when the job it would
// insert waits for one that has failed, and would start cancelled.
func testKeyHeldDependencyFailed(t *testing.T, e *env) {
	failed := e.failedJob()
	p := job("k")
	p.UniqueKey = "u"
	holder := e.insertOne(p)
	p.DependsOn = []int64{failed.ID}
	got := e.insertResults(p)[0]
	if !got.Duplicate || got.Job.ID != holder.ID {
		t.Errorf("insert of a held key: duplicate %v of %d (%s), want a duplicate of %d", got.Duplicate, got.Job.ID, got.Job.State, holder.ID)
	}
	p.Supersede = true
	got = e.insertResults(p)[0]
	if got.Duplicate || got.Job.State != store.StateCancelled {
		t.Errorf("superseding insert: duplicate %v, %s; want a new job, cancelled", got.Duplicate, got.Job.State)
	}
	wantState(t, e.get(holder.ID), store.StateCancelled)
}

// The same, the key's holder being an earlier job of the same call: the job that would start
// cancelled is a duplicate of it, or, superseding, cancels it and is inserted cancelled.
func testKeyHeldInCallDepFailed(t *testing.T, e *env) {
	failed := e.failedJob()
	p := job("k")
	p.UniqueKey = "u"
	doomed := p
	doomed.DependsOn = []int64{failed.ID}
	res := e.insertResults(p, doomed)
	if !res[1].Duplicate || res[1].Job.ID != res[0].Job.ID {
		t.Errorf("held key: job 1 of the call is duplicate %v of %d (%s), want a duplicate of job 0, %d",
			res[1].Duplicate, res[1].Job.ID, res[1].Job.State, res[0].Job.ID)
	}
	wantState(t, e.get(res[0].Job.ID), store.StateAvailable)

	p.UniqueKey, doomed.UniqueKey, doomed.Supersede = "v", "v", true
	res = e.insertResults(p, doomed)
	if res[1].Duplicate || res[1].Job.ID == res[0].Job.ID || res[1].Job.State != store.StateCancelled {
		t.Errorf("superseding: job 1 of the call is duplicate %v, %d (%s); want a new job, cancelled",
			res[1].Duplicate, res[1].Job.ID, res[1].Job.State)
	}
	wantState(t, e.get(res[0].Job.ID), store.StateCancelled)
	counts := e.stats()["default"].Counts
	if counts[store.StateAvailable] != 1 || counts[store.StateCancelled] != 3 {
		t.Errorf("queue counts %v, want 1 available (the first key's holder) and 3 cancelled", counts)
	}
}

// A job of the call whose key an earlier job of the call took by superseding its holder is a
// duplicate of that earlier job, not of the holder it cancelled, whether it would start live or
// cancelled (a dependency failed).
func testKeyTakenInCallBySupersede(t *testing.T, e *env) {
	failed := e.failedJob()
	p := job("k")
	p.UniqueKey = "u"
	old := e.insertOne(p)
	sup := p
	sup.Supersede = true
	doomed := p
	doomed.DependsOn = []int64{failed.ID}
	for _, c := range []struct {
		name  string
		later store.InsertParams
	}{{"live", p}, {"starting cancelled", doomed}} {
		res := e.insertResults(sup, c.later)
		if !res[1].Duplicate || res[1].Job.ID != res[0].Job.ID {
			t.Errorf("%s job after a supersede in its call: duplicate %v of %d (%s), want a duplicate of job 0, %d",
				c.name, res[1].Duplicate, res[1].Job.ID, res[1].Job.State, res[0].Job.ID)
		}
		wantState(t, e.get(res[0].Job.ID), store.StateAvailable)
	}
	wantState(t, e.get(old.ID), store.StateCancelled)
}

// An earlier job of the call takes its key first even when it waits for a job of the call and a
// later one of the key does not: the later one is its duplicate, live or starting cancelled.
func testKeyHeldInCallLaterGen(t *testing.T, e *env) {
	failed := e.failedJob()
	p := job("k")
	p.UniqueKey, p.DependsOnIndex = "u", []int{0}
	live := job("k")
	live.UniqueKey = "u"
	doomed := live
	doomed.UniqueKey, doomed.DependsOn = "v", []int64{failed.ID}
	q := p
	q.UniqueKey = "v"
	for _, c := range []struct {
		name       string
		first, dup store.InsertParams
	}{{"live", p, live}, {"starting cancelled", q, doomed}} {
		res := e.insertResults(job("k"), c.first, c.dup)
		if res[1].Duplicate || !res[2].Duplicate || res[2].Job.ID != res[1].Job.ID {
			t.Errorf("%s: job 1 of the call duplicate %v (%d), job 2 duplicate %v of %d; want job 2 a duplicate of job 1",
				c.name, res[1].Duplicate, res[1].Job.ID, res[2].Duplicate, res[2].Job.ID)
		}
	}
}

// Two jobs of a call supersede in turn: the first the job holding their key, the second, which
// starts cancelled (a dependency failed), the first. All three end cancelled.
func testSupersedeChainInCall(t *testing.T, e *env) {
	failed := e.failedJob()
	p := job("k")
	p.UniqueKey = "u"
	old := e.insertOne(p)
	p.Supersede = true
	doomed := p
	doomed.DependsOn = []int64{failed.ID}
	res := e.insertResults(p, doomed)
	for i, r := range res {
		if r.Duplicate {
			t.Errorf("job %d of the call is a duplicate of %d", i, r.Job.ID)
		}
		if r.Job.State != store.StateCancelled {
			t.Errorf("job %d of the call: Insert returned it %s, want cancelled", i, r.Job.State)
		}
		wantState(t, e.get(r.Job.ID), store.StateCancelled)
	}
	wantState(t, e.get(old.ID), store.StateCancelled)
}

// Two running jobs of one key that hold it only once completed finish in one call: both
// complete, the key staying with one.
func testCompleteSharedKey(t *testing.T, e *env) {
	for range 2 {
		p := job("k")
		p.UniqueKey, p.UniqueStates = "u", []store.State{store.StateCompleted}
		if r := e.insertResults(p)[0]; r.Duplicate {
			t.Fatalf("a duplicate of %d", r.Job.ID)
		}
	}
	claimed := e.claim("default", 2)
	if len(claimed) != 2 {
		t.Fatalf("claimed %d jobs, want 2", len(claimed))
	}
	applied, err := e.s.Complete(e.ctx, []store.Outcome{
		{ID: claimed[0].ID, Fence: claimed[0].Fence, State: store.StateCompleted},
		{ID: claimed[1].ID, Fence: claimed[1].Fence, State: store.StateCompleted},
	})
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if !applied[0] || !applied[1] {
		t.Errorf("applied %v, want both", applied)
	}
}

// Two running jobs of one key that hold it only once retryable lose their leases together: one
// rescue makes both retryable, the key staying with one.
func testRescueSharedKey(t *testing.T, e *env) {
	for range 2 {
		p := job("k")
		p.UniqueKey, p.UniqueStates, p.MaxAttempts = "u", []store.State{store.StateRetryable}, 3
		if r := e.insertResults(p)[0]; r.Duplicate {
			t.Fatalf("a duplicate of %d", r.Job.ID)
		}
	}
	if claimed := e.claim("default", 2); len(claimed) != 2 {
		t.Fatalf("claimed %d jobs, want 2", len(claimed))
	}
	e.advance(time.Hour)
	got, err := e.s.Rescue(e.ctx, 10)
	wantBoth(t, "Rescue", got, err)
}

// A completion batch that holds a stale outcome for a job of the key (its lease ran out, it was
// rescued) beside the outcome of the key's other job: the refused outcome takes no key, and the
// job that completes keeps it.
func testCompleteStalePeer(t *testing.T, e *env) {
	p := job("k")
	p.UniqueKey, p.UniqueStates = "u", []store.State{store.StateAvailable, store.StateCompleted}
	a := e.insertOne(p)
	ca := e.claimAs("n1", time.Second, 1)
	if len(ca) != 1 || ca[0].ID != a.ID {
		t.Fatalf("claimed %v, want a", ids(ca))
	}
	rb := e.insertResults(p)[0] // a runs, which does not hold the key
	if rb.Duplicate {
		t.Fatalf("b is a duplicate of %d", rb.Job.ID)
	}
	e.advance(2 * time.Second)
	cb := e.claimAs("n2", time.Hour, 1)
	if len(cb) != 1 || cb[0].ID != rb.Job.ID {
		t.Fatalf("claimed %v, want b", ids(cb))
	}
	if r := e.rescue(10); len(r) != 1 || r[0].ID != a.ID || r[0].State != store.StateRetryable {
		t.Fatalf("rescued %v, want a, retryable", ids(r))
	}
	applied := e.complete(
		store.Outcome{ID: a.ID, Fence: ca[0].Fence, State: store.StateCompleted},
		store.Outcome{ID: cb[0].ID, Fence: cb[0].Fence, State: store.StateCompleted})
	if applied[0] || !applied[1] {
		t.Fatalf("applied %v, want a's stale outcome refused and b's applied", applied)
	}
	if r := e.insertResults(p)[0]; !r.Duplicate || r.Job.ID != rb.Job.ID {
		t.Errorf("insert of the key after b completed: duplicate %v of %d (%s), want a duplicate of b %d",
			r.Duplicate, r.Job.ID, r.Job.State, rb.Job.ID)
	}
}

// A job of a call that ignores failed dependencies, released by a supersede of the call and
// then itself superseded by a later job of the call, is counted once, cancelled.
func testReleasedThenSupersededCounts(t *testing.T, e *env) {
	held := job("k")
	held.UniqueKey = "d"
	h := e.insertOne(held)
	x := after(h.ID)
	x.UniqueKey, x.IgnoreFailedDeps = "x", true
	supD := held
	supD.Supersede = true
	supX := job("k")
	supX.UniqueKey, supX.Supersede = "x", true
	res := e.insertResults(x, supD, supX)
	wantState(t, e.get(res[0].Job.ID), store.StateCancelled)
	if res[0].Job.State != store.StateCancelled {
		t.Errorf("Insert returned x %s, want cancelled", res[0].Job.State)
	}
	counts := e.stats()["default"].Counts
	if counts[store.StateCancelled] != 2 || counts[store.StateAvailable] != 2 || counts[store.StatePending] != 0 {
		t.Errorf("queue counts %v, want 2 cancelled and 2 available", counts)
	}
}
