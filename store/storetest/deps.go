package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

var depTests = map[string]func(*testing.T, *env){
	"PendingUntilDepsComplete":      testPendingUntilDeps,
	"DependsOnIndex":                testDependsOnIndex,
	"DepEndedBeforeInsert":          testDepEndedBeforeInsert,
	"FailedDepCancelsChain":         testFailedDepCancelsChain,
	"IgnoreFailedDeps":              testIgnoreFailedDeps,
	"EveryEndResolves":              testEveryEndResolves,
	"DeletedDep":                    testDeletedDep,
	"UnknownDep":                    testUnknownDep,
	"DependencyOf":                  testDependencyOf,
	"NumberedSteps":                 testNumberedSteps,
	"NumberedStepDuplicate":         testNumberedStepDuplicate,
	"NumberedStepsMixed":            testNumberedStepsMixed,
	"NumberedStepsInCallOrder":      testNumberedStepsInCallOrder,
	"DuplicateDoesNotJoin":          testDuplicateDoesNotJoin,
	"JoinEndedByItsCall":            testJoinEndedByItsCall,
	"WorkflowCountsEveryState":      testWorkflowCountsEveryState,
	"ReleasedIntoItsRunAt":          testReleasedIntoRunAt,
	"RescuedDepStillAwaited":        testRescuedDepAwaited,
	"RetryPendingRunsNow":           testRetryPending,
	"SupersedePending":              testSupersedePending,
	"SupersedeInCall":               testSupersedeInCall,
	"FanOutFanIn":                   testFanOutFanIn,
	"MixedEndsInOneCall":            testMixedEndsInOneCall,
	"MixedInsert":                   testMixedInsert,
	"WorkflowsListed":               testWorkflowsListed,
	"WorkflowGoesWithItsSteps":      testWorkflowGoesWithSteps,
	"RetryWorkflow":                 testRetryWorkflow,
	"RetryWorkflowOutsideFailed":    testRetryWorkflowOutsideFailed,
	"RetriedStepWaitsForOne":        testRetriedStepWaitsForOne,
	"RetryWorkflowOpenBatch":        testRetryWorkflowOpenBatch,
	"RetryWorkflowOpenBatchTwo":     testRetryWorkflowOpenBatchTwo,
	"RetriedStepKeepsRunAt":         testRetriedStepKeepsRunAt,
	"LastDepsEndAtOnce":             func(t *testing.T, e *env) { LastDepsRace(t, e.s) },
	"DepEndsWhileDependentInserted": func(t *testing.T, e *env) { InsertDepRace(t, e.s) },
}

// after returns job("k") waiting for ids.
func after(ids ...int64) store.InsertParams {
	p := job("k")
	p.DependsOn = ids
	return p
}

// wfStep is job("k") as the step name of workflow "wf" with one attempt, waiting for the jobs of
// its call at indexes deps.
func wfStep(name string, deps ...int) store.InsertParams {
	p := job("k")
	p.Workflow, p.Step, p.DependsOnIndex, p.MaxAttempts = "wf", name, deps, 1
	return p
}

// retryWorkflow runs RetryWorkflow on "wf" and checks that it ran exactly the jobs want again.
func (e *env) retryWorkflow(want ...int64) {
	e.t.Helper()
	changed, err := e.s.RetryWorkflow(e.ctx, "wf")
	if err != nil {
		e.t.Fatal(err)
	}
	got, w := ids(changed), slices.Clone(want)
	slices.Sort(got)
	slices.Sort(w)
	if !slices.Equal(got, w) {
		e.t.Fatalf("RetryWorkflow changed %v, want %v", got, w)
	}
}

// finish claims the job with id (it must be claimable in queue "default") and ends it in state.
func (e *env) finish(id int64, state store.State) {
	e.t.Helper()
	for _, c := range e.claim("default", 100) {
		o := store.Outcome{ID: c.ID, Fence: c.Fence, State: store.StateAvailable, RefundAttempt: true}
		if c.ID == id {
			o.State, o.RefundAttempt = state, false
			if state == store.StateRetryable {
				o.Error = &store.AttemptError{Error: "boom"}
			}
		}
		e.completeOK(o)
	}
	if got := e.get(id); got.State != state && !(state.Final() && got.State.Final()) {
		e.t.Fatalf("job %d is %s after finish, want %s", id, got.State, state)
	}
}

func wantPending(t *testing.T, e *env, ids ...int64) {
	t.Helper()
	for _, id := range ids {
		if j := e.get(id); j.State != store.StatePending {
			t.Errorf("job %d is %s, want pending", id, j.State)
		}
	}
}

// wantDepCancelled checks that j ended cancelled now, because dep ended in state.
func wantDepCancelled(t *testing.T, e *env, id, dep int64, state store.State) {
	t.Helper()
	j := e.get(id)
	wantFinalized(t, j, store.StateCancelled, e.now())
	wantUnclaimed(t, j)
	sameErrors(t, j.Errors, []store.AttemptError{{Attempt: j.Attempt, At: e.now(), Error: store.DependencyError(dep, state)}})
}

// A job with dependencies is inserted pending, is never claimed while it waits, and becomes
// available when the last of them completes.
func testPendingUntilDeps(t *testing.T, e *env) {
	a, b := e.insertOne(job("k")), e.insertOne(job("k"))
	c := e.insertOne(after(a.ID, b.ID))
	if c.State != store.StatePending {
		t.Fatalf("inserted %s, want pending", c.State)
	}
	if got := e.get(c.ID); !slices.Equal(got.DependsOn, []int64{a.ID, b.ID}) || got.IgnoreFailedDeps {
		t.Errorf("DependsOn = %v (ignore %v), want %v", got.DependsOn, got.IgnoreFailedDeps, []int64{a.ID, b.ID})
	}
	if n := e.stats()["default"].Counts[store.StatePending]; n != 1 {
		t.Errorf("QueueStats counts %d pending, want 1", n)
	}
	e.finish(a.ID, store.StateCompleted)
	wantPending(t, e, c.ID)
	e.advance(time.Second)
	e.finish(b.ID, store.StateCompleted)
	got := e.get(c.ID)
	wantState(t, got, store.StateAvailable)
	wantTime(t, "released RunAt", got.RunAt, e.now())
	if claimed := e.claimOne(); claimed.ID != c.ID {
		t.Fatalf("claimed %d, want the released %d", claimed.ID, c.ID)
	}
	if counts := e.stats()["default"].Counts; counts[store.StatePending] != 0 || counts[store.StateRunning] != 1 {
		t.Errorf("counts %v, want 0 pending and 1 running", counts)
	}
}

// Steps of one Insert call wait for earlier steps of the same call by index.
func testDependsOnIndex(t *testing.T, e *env) {
	a, b, c := job("k"), job("k"), job("k")
	a.Workflow, b.Workflow, c.Workflow = "wf-1", "wf-1", "wf-1"
	a.Step, b.Step, c.Step = "a", "b", "c"
	b.DependsOnIndex = []int{0}
	c.DependsOnIndex = []int{0, 1}
	rows := e.insert(a, b, c)
	if rows[0].State != store.StateAvailable || rows[1].State != store.StatePending || rows[2].State != store.StatePending {
		t.Fatalf("states %s %s %s, want available pending pending", rows[0].State, rows[1].State, rows[2].State)
	}
	got := e.get(rows[2].ID)
	if !slices.Equal(got.DependsOn, []int64{rows[0].ID, rows[1].ID}) || got.Workflow != "wf-1" || got.Step != "c" {
		t.Errorf("step c: DependsOn %v, Workflow %q, Step %q", got.DependsOn, got.Workflow, got.Step)
	}
	e.finish(rows[0].ID, store.StateCompleted)
	wantState(t, e.get(rows[1].ID), store.StateAvailable)
	wantPending(t, e, rows[2].ID)
	e.finish(rows[1].ID, store.StateCompleted)
	wantState(t, e.get(rows[2].ID), store.StateAvailable)
}

// A dependency that ended before its dependent is inserted counts as it ended.
func testDepEndedBeforeInsert(t *testing.T, e *env) {
	done, failed := e.insertOne(job("k")), e.insertOne(job("k"))
	e.finish(done.ID, store.StateCompleted)
	e.finish(failed.ID, store.StateDiscarded)
	if j := e.insertOne(after(done.ID)); j.State != store.StateAvailable {
		t.Errorf("after a completed job: inserted %s, want available", j.State)
	}
	cancelled := e.insertOne(after(done.ID, failed.ID))
	wantDepCancelled(t, e, cancelled.ID, failed.ID, store.StateDiscarded)
	ignoring := after(failed.ID)
	ignoring.IgnoreFailedDeps = true
	if j := e.insertOne(ignoring); j.State != store.StateAvailable || !e.get(j.ID).IgnoreFailedDeps {
		t.Errorf("ignoring failures, after a discarded job: inserted %s, want available", j.State)
	}
	if n := e.stats()["default"].Counts[store.StateCancelled]; n != 1 {
		t.Errorf("QueueStats counts %d cancelled, want 1", n)
	}
}

// A dependency that fails cancels its dependents, and theirs in turn, each naming the job it
// waited for; jobs that do not wait for the failed one are left alone.
func testFailedDepCancelsChain(t *testing.T, e *env) {
	a, other := e.insertOne(job("k")), e.insertOne(job("k"))
	b := e.insertOne(after(a.ID))
	c := e.insertOne(after(b.ID, other.ID))
	d := e.insertOne(after(other.ID))
	e.advance(time.Second)
	e.finish(a.ID, store.StateDiscarded)
	wantDepCancelled(t, e, b.ID, a.ID, store.StateDiscarded)
	wantDepCancelled(t, e, c.ID, b.ID, store.StateCancelled)
	wantPending(t, e, d.ID)
	if counts := e.stats()["default"].Counts; counts[store.StatePending] != 1 || counts[store.StateCancelled] != 2 {
		t.Errorf("counts %v, want 1 pending, 2 cancelled", counts)
	}
	if n := len(e.claim("default", 10)); n != 1 {
		t.Errorf("claimed %d, want only the unrelated job", n)
	}
}

// A dependent that ignores failed dependencies waits for each to end, however.
func testIgnoreFailedDeps(t *testing.T, e *env) {
	a, b := e.insertOne(job("k")), e.insertOne(job("k"))
	p := after(a.ID, b.ID)
	p.IgnoreFailedDeps = true
	cb := e.insertOne(p)
	later := e.insertOne(after(cb.ID))
	e.finish(a.ID, store.StateDiscarded)
	wantPending(t, e, cb.ID, later.ID)
	e.finish(b.ID, store.StateRetryable)
	wantPending(t, e, cb.ID)
	e.advance(time.Second)
	e.finish(b.ID, store.StateCompleted)
	wantState(t, e.get(cb.ID), store.StateAvailable)
	wantPending(t, e, later.ID)
}

// Every way a job ends resolves its dependents: a user's cancel, an expiry at claim, a rescue
// that uses the last attempt; cancelling a pending job cancels what waits for it.
func testEveryEndResolves(t *testing.T, e *env) {
	cancelled := e.insertOne(job("k"))
	p := job("k")
	p.ExpiresAt = e.now().Add(time.Second)
	expiring := e.insertOne(p)
	p = job("k")
	p.MaxAttempts = 1
	lost := e.insertOne(p)
	w1, w2, w3 := e.insertOne(after(cancelled.ID)), e.insertOne(after(expiring.ID)), e.insertOne(after(lost.ID))
	pend := e.insertOne(after(w3.ID))
	w4 := e.insertOne(after(pend.ID))

	e.cancel(cancelled.ID)
	wantDepCancelled(t, e, w1.ID, cancelled.ID, store.StateCancelled)

	// The lost job is claimed first (lowest id after the cancelled one but the expiring one).
	e.advance(2 * time.Second)
	claimed := e.claimAs("dead", time.Second, 10)
	if len(claimed) != 1 || claimed[0].ID != lost.ID {
		t.Fatalf("claimed %v, want only job %d (the other expired)", ids(claimed), lost.ID)
	}
	wantState(t, e.get(expiring.ID), store.StateExpired)
	wantDepCancelled(t, e, w2.ID, expiring.ID, store.StateExpired)

	e.advance(time.Minute)
	if n := len(e.rescue(10)); n != 1 {
		t.Fatalf("rescued %d, want 1", n)
	}
	wantDepCancelled(t, e, w3.ID, lost.ID, store.StateDiscarded)
	wantDepCancelled(t, e, pend.ID, w3.ID, store.StateCancelled)
	wantDepCancelled(t, e, w4.ID, pend.ID, store.StateCancelled)

	top := e.insertOne(job("k"))
	mid := e.insertOne(after(top.ID))
	low := e.insertOne(after(mid.ID))
	e.cancel(mid.ID)
	wantFinalized(t, e.get(mid.ID), store.StateCancelled, e.now())
	wantDepCancelled(t, e, low.ID, mid.ID, store.StateCancelled)
}

// Deleting a dependency that had not ended cancels what waits for it, but for a dependent that
// ignores failed dependencies, for which it has ended; deleting a completed one changes nothing.
func testDeletedDep(t *testing.T, e *env) {
	a, done := e.insertOne(job("k")), e.insertOne(job("k"))
	b := e.insertOne(after(a.ID))
	c := e.insertOne(after(done.ID, b.ID))
	p := after(a.ID)
	p.IgnoreFailedDeps = true
	ignoring := e.insertOne(p)
	e.finish(done.ID, store.StateCompleted)
	if err := e.s.Delete(e.ctx, done.ID); err != nil {
		t.Fatal(err)
	}
	wantPending(t, e, c.ID)
	if err := e.s.Delete(e.ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	j := e.get(b.ID)
	wantFinalized(t, j, store.StateCancelled, e.now())
	sameErrors(t, j.Errors, []store.AttemptError{{At: e.now(), Error: store.DependencyDeletedError(a.ID)}})
	wantDepCancelled(t, e, c.ID, b.ID, store.StateCancelled)
	wantState(t, e.get(ignoring.ID), store.StateAvailable)
}

// An insert naming a job the store does not hold fails and inserts nothing.
func testUnknownDep(t *testing.T, e *env) {
	a := e.insertOne(job("k"))
	_, err := e.s.Insert(e.ctx, []store.InsertParams{job("k"), after(a.ID, 987654)})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Insert after an unknown job: %v, want ErrNotFound", err)
	}
	if n := len(e.list(store.ListParams{})); n != 1 {
		t.Errorf("%d jobs after the failed insert, want 1", n)
	}
}

// A job added to an open batch joins its callback's dependencies; once the callback is
// released, adding fails and inserts nothing.
func testDependencyOf(t *testing.T, e *env) {
	a := e.insertOne(job("k"))
	p := after(a.ID)
	p.IgnoreFailedDeps = true
	cb := e.insertOne(p)
	add := job("k")
	add.DependencyOf = cb.ID
	added := e.insertOne(add)
	if got := e.get(cb.ID); !slices.Equal(got.DependsOn, []int64{a.ID, added.ID}) {
		t.Errorf("callback DependsOn = %v, want %v", got.DependsOn, []int64{a.ID, added.ID})
	}
	e.finish(a.ID, store.StateCompleted)
	wantPending(t, e, cb.ID)
	e.finish(added.ID, store.StateDiscarded)
	wantState(t, e.get(cb.ID), store.StateAvailable)

	_, err := e.s.Insert(e.ctx, []store.InsertParams{job("k"), add})
	if !errors.Is(err, store.ErrNotPending) {
		t.Fatalf("adding to a released callback: %v, want ErrNotPending", err)
	}
	if n := len(e.list(store.ListParams{})); n != 3 {
		t.Errorf("%d jobs after the failed insert, want 3", n)
	}
}

// Jobs that join a pending job with NumberStep are named by their places among the jobs it waits
// for, in one call and in several, and jobs added by concurrent calls are named apart.
func testNumberedSteps(t *testing.T, e *env) {
	a := e.insertOne(job("k"))
	p := after(a.ID)
	p.IgnoreFailedDeps = true
	cb := e.insertOne(p)
	add := job("k")
	add.Workflow, add.Step, add.DependencyOf, add.NumberStep = "wf", "job-", cb.ID, true
	for i, r := range e.insertResults(add, add) {
		if want := fmt.Sprintf("job-%d", i+2); r.Job.Step != want || e.get(r.Job.ID).Step != want {
			t.Errorf("job %d of the call: step %q (stored %q), want %q", i, r.Job.Step, e.get(r.Job.ID).Step, want)
		}
	}
	const callers = 8
	steps := make(chan string, callers)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			res, err := e.s.Insert(e.ctx, []store.InsertParams{add})
			if err != nil {
				t.Errorf("Insert: %v", err)
				return
			}
			steps <- res[0].Job.Step
		})
	}
	wg.Wait()
	close(steps)
	seen := map[string]bool{}
	for s := range steps {
		seen[s] = true
	}
	for i := 4; i < 4+callers; i++ {
		if s := fmt.Sprintf("job-%d", i); !seen[s] {
			t.Errorf("no job named %q; concurrent calls named theirs %v", s, seen)
		}
	}
	got := e.get(cb.ID).DependsOn
	for i, id := range got {
		if want := fmt.Sprintf("job-%d", i+1); i > 0 && e.get(id).Step != want {
			t.Errorf("job %d, place %d of the callback, is step %q, want %q", id, i+1, e.get(id).Step, want)
		}
	}
}

// openCallback inserts a job and a pending callback waiting for it (ignoring failures when
// ignore), and returns both.
func (e *env) openCallback(ignore bool) (first, cb *store.JobRow) {
	e.t.Helper()
	first = e.insertOne(job("k"))
	p := after(first.ID)
	p.IgnoreFailedDeps = ignore
	return first, e.insertOne(p)
}

// numbered is job("k") joining cb as a numbered step "job-<place>" of workflow "wf".
func numbered(cb int64) store.InsertParams {
	p := job("k")
	p.Workflow, p.Step, p.DependencyOf, p.NumberStep = "wf", "job-", cb, true
	return p
}

// wantDependsOn checks that job id waits for want, in that order.
func wantDependsOn(t *testing.T, e *env, id int64, want ...int64) {
	t.Helper()
	if got := e.get(id).DependsOn; !slices.Equal(got, want) {
		t.Errorf("job %d: DependsOn = %v, want %v", id, got, want)
	}
}

// wantStep checks that r, a result of Insert, and the job as stored are step want.
func wantStep(t *testing.T, e *env, what string, r store.InsertResult, want string) {
	t.Helper()
	if got := e.get(r.Job.ID).Step; r.Job.Step != want || got != want {
		t.Errorf("%s (job %d, duplicate %v): step %q, stored %q; want %q", what, r.Job.ID, r.Duplicate, r.Job.Step, got, want)
	}
}

// A duplicate of a numbered job of the same call is answered with that job as it is: named.
func testNumberedStepDuplicate(t *testing.T, e *env) {
	first, cb := e.openCallback(true)
	add := numbered(cb.ID)
	add.UniqueKey = "u"
	res := e.insertResults(add, add, numbered(cb.ID))
	if !res[1].Duplicate || res[1].Job.ID != res[0].Job.ID {
		t.Fatalf("job 1 of the call: duplicate %v of %d, want a duplicate of job 0, %d", res[1].Duplicate, res[1].Job.ID, res[0].Job.ID)
	}
	wantStep(t, e, "job 0 of the call", res[0], "job-2")
	wantStep(t, e, "job 1 of the call, its duplicate", res[1], "job-2")
	wantStep(t, e, "job 2 of the call", res[2], "job-3")
	wantDependsOn(t, e, cb.ID, first.ID, res[0].Job.ID, res[2].Job.ID)
}

// A job that joins without NumberStep takes its place too: a numbered job after it in the same
// call is named by its own place.
func testNumberedStepsMixed(t *testing.T, e *env) {
	first, cb := e.openCallback(true)
	plain := job("k")
	plain.Workflow, plain.Step, plain.DependencyOf = "wf", "extra", cb.ID
	res := e.insertResults(numbered(cb.ID), plain, numbered(cb.ID))
	wantDependsOn(t, e, cb.ID, first.ID, res[0].Job.ID, res[1].Job.ID, res[2].Job.ID)
	wantStep(t, e, "job 0 of the call", res[0], "job-2")
	wantStep(t, e, "job 2 of the call", res[2], "job-4")
}

// The numbered jobs of one call take their places in the call's order, however the store goes
// about inserting them: one that first supersedes the job holding its key, one that waits for an
// earlier job of the call.
func testNumberedStepsInCallOrder(t *testing.T, e *env) {
	first, cb := e.openCallback(true)
	held := job("k")
	held.UniqueKey = "u"
	e.insertOne(held)
	sup := numbered(cb.ID)
	sup.UniqueKey, sup.Supersede = "u", true
	res := e.insertResults(sup, numbered(cb.ID))
	wantStep(t, e, "superseding job 0 of the call", res[0], "job-2")
	wantStep(t, e, "job 1 of the call", res[1], "job-3")
	wantDependsOn(t, e, cb.ID, first.ID, res[0].Job.ID, res[1].Job.ID)
	waits := numbered(cb.ID)
	waits.DependsOnIndex = []int{0}
	res = e.insertResults(job("k"), waits, numbered(cb.ID))
	wantStep(t, e, "job 1 of the second call, waiting for job 0", res[1], "job-4")
	wantStep(t, e, "job 2 of the second call", res[2], "job-5")
}

// A job that would join a pending job but is a duplicate joins nothing: the job holding its key
// is not added to the pending job's dependencies, and takes no place there.
func testDuplicateDoesNotJoin(t *testing.T, e *env) {
	first, cb := e.openCallback(true)
	held := job("k")
	held.UniqueKey = "u"
	h := e.insertOne(held)
	dup := numbered(cb.ID)
	dup.UniqueKey = "u"
	res := e.insertResults(dup, numbered(cb.ID))
	if !res[0].Duplicate || res[0].Job.ID != h.ID {
		t.Fatalf("job 0 of the call: duplicate %v of %d, want a duplicate of %d", res[0].Duplicate, res[0].Job.ID, h.ID)
	}
	wantDependsOn(t, e, cb.ID, first.ID, res[1].Job.ID)
	wantStep(t, e, "job 1 of the call", res[1], "job-2")
}

// A job pending when the call begins may be joined by each job of the call, even once an earlier
// job of the call has ended it (joining it cancelled, a dependency of its own having failed): the
// later ones join its list, by their places, and change nothing else of it. Every store does so,
// whether it inserts the later jobs with the earlier ones or after them (one waits for another).
func testJoinEndedByItsCall(t *testing.T, e *env) {
	first, cb := e.openCallback(false)
	failed := e.failedJob()
	doomed := numbered(cb.ID)
	doomed.DependsOn = []int64{failed.ID}
	waits := numbered(cb.ID)
	waits.DependsOnIndex = []int{0}
	res, err := e.s.Insert(e.ctx, []store.InsertParams{numbered(cb.ID), doomed, numbered(cb.ID), waits})
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	for i, want := range []store.State{store.StateAvailable, store.StateCancelled, store.StateAvailable, store.StatePending} {
		wantStep(t, e, fmt.Sprintf("job %d of the call", i), res[i], fmt.Sprintf("job-%d", i+2))
		wantState(t, e.get(res[i].Job.ID), want)
	}
	wantDepCancelled(t, e, cb.ID, res[1].Job.ID, store.StateCancelled)
	wantDependsOn(t, e, cb.ID, first.ID, res[0].Job.ID, res[1].Job.ID, res[2].Job.ID, res[3].Job.ID)
	if _, err := e.s.Insert(e.ctx, []store.InsertParams{numbered(cb.ID)}); !errors.Is(err, store.ErrNotPending) {
		t.Errorf("joining it in a later call: %v, want ErrNotPending", err)
	}
	counts := e.stats()["default"].Counts
	if counts[store.StateCancelled] != 3 || counts[store.StateAvailable] != 3 || counts[store.StatePending] != 1 {
		t.Errorf("queue counts %v, want 3 cancelled, 3 available and 1 pending", counts)
	}
}

// Workflows lists every state in a workflow's counts, zero or not, as QueueStats lists a
// queue's.
func testWorkflowCountsEveryState(t *testing.T, e *env) {
	e.insert(wfStep("a"))
	ws, err := e.s.Workflows(e.ctx, store.WorkflowListParams{ID: "wf"})
	if err != nil || len(ws) != 1 {
		t.Fatalf("Workflows(wf) = %+v, %v", ws, err)
	}
	for _, st := range store.States {
		if _, ok := ws[0].Counts[st]; !ok {
			t.Errorf("Workflows counts %v: no count for %s", ws[0].Counts, st)
		}
	}
}

// A dependent whose RunAt is still ahead when its dependencies end becomes scheduled, not
// available.
func testReleasedIntoRunAt(t *testing.T, e *env) {
	a := e.insertOne(job("k"))
	p := after(a.ID)
	p.RunAt = e.now().Add(time.Hour)
	b := e.insertOne(p)
	wantPending(t, e, b.ID)
	e.finish(a.ID, store.StateCompleted)
	got := e.get(b.ID)
	wantState(t, got, store.StateScheduled)
	wantTime(t, "RunAt", got.RunAt, p.RunAt)
	e.advance(time.Hour)
	if c := e.claimOne(); c.ID != b.ID {
		t.Fatalf("claimed %d, want %d", c.ID, b.ID)
	}
}

// A dependency rescued with attempts left is still awaited; its dependent is released when a
// later attempt completes.
func testRescuedDepAwaited(t *testing.T, e *env) {
	a := e.insertOne(job("k"))
	b := e.insertOne(after(a.ID))
	e.claimAs("dead", time.Second, 1)
	e.advance(time.Minute)
	if n := len(e.rescue(10)); n != 1 {
		t.Fatalf("rescued %d, want 1", n)
	}
	wantPending(t, e, b.ID)
	e.finish(a.ID, store.StateCompleted)
	wantState(t, e.get(b.ID), store.StateAvailable)
}

// Retry runs a pending job now; a later end of what it waited for leaves it alone.
func testRetryPending(t *testing.T, e *env) {
	a := e.insertOne(job("k"))
	b := e.insertOne(after(a.ID))
	if got := e.retry(b.ID); got.State != store.StateAvailable {
		t.Fatalf("retried pending job is %s, want available", got.State)
	}
	e.cancel(a.ID)
	wantState(t, e.get(b.ID), store.StateAvailable)
}

// A pending job holds its unique key; superseding it cancels it, and what waits for it.
func testSupersedePending(t *testing.T, e *env) {
	a := e.insertOne(job("k"))
	p := after(a.ID)
	p.UniqueKey = "u"
	held := e.insertOne(p)
	dup := e.insertResults(p)[0]
	if !dup.Duplicate || dup.Job.ID != held.ID {
		t.Fatalf("second insert: duplicate %v of %d, want a duplicate of pending %d", dup.Duplicate, dup.Job.ID, held.ID)
	}
	w := e.insertOne(after(held.ID))
	p.Supersede = true
	e.insertOne(p)
	wantFinalized(t, e.get(held.ID), store.StateCancelled, e.now())
	wantDepCancelled(t, e, w.ID, held.ID, store.StateCancelled)
}

// A job of a call that supersedes an earlier job of the same call cancels it and the job of the
// call that waits for it, and Insert returns each as the store holds it.
func testSupersedeInCall(t *testing.T, e *env) {
	held := job("k")
	held.UniqueKey = "u"
	waits := job("k")
	waits.DependsOnIndex = []int{0}
	replaces := held
	replaces.Supersede = true
	res := e.insertResults(held, waits, replaces)
	for i, want := range []store.State{store.StateCancelled, store.StateCancelled, store.StateAvailable} {
		if res[i].Job.State != want {
			t.Errorf("job %d of the call: Insert returned it %s, want %s", i, res[i].Job.State, want)
		}
		wantState(t, e.get(res[i].Job.ID), want)
	}
	wantDepCancelled(t, e, res[1].Job.ID, res[0].Job.ID, store.StateCancelled)
	counts := e.stats()["default"].Counts
	if counts[store.StateCancelled] != 2 || counts[store.StateAvailable] != 1 || counts[store.StatePending] != 0 {
		t.Errorf("queue counts %v, want 2 cancelled and 1 available", counts)
	}
}

// One call mixes plain jobs with jobs that wait for pending, completed and failed jobs, for
// earlier jobs of the call, and for several jobs each: every one starts as it would alone.
func testMixedInsert(t *testing.T, e *env) {
	r1, r2 := e.insertOne(job("k")), e.insertOne(job("k"))
	done, failed := e.insertOne(job("k")), e.insertOne(job("k"))
	e.finish(done.ID, store.StateCompleted)
	e.finish(failed.ID, store.StateDiscarded)
	ignoring := after(failed.ID)
	ignoring.IgnoreFailedDeps = true
	inCall := job("k")
	inCall.DependsOnIndex = []int{0, 1}
	ps := []store.InsertParams{
		after(r1.ID),               // 0: waits for r1
		job("k"),                   // 1: plain
		after(r1.ID, r2.ID),        // 2: waits for both
		after(done.ID),             // 3: its one dependency completed
		after(done.ID, failed.ID),  // 4: cancelled by failed
		ignoring,                   // 5: runs anyway
		after(r2.ID, done.ID),      // 6: waits for r2 only
		inCall,                     // 7: waits for 0 (pending) and 1 (available)
		after(r1.ID, r1.ID, r2.ID), // 8: repeats are one dependency
	}
	for i := range ps {
		ps[i].Workflow, ps[i].Step = "wf-mixed", fmt.Sprint("step-", i)
	}
	rows := e.insert(ps...)
	want := []store.State{store.StatePending, store.StateAvailable, store.StatePending, store.StateAvailable,
		store.StateCancelled, store.StateAvailable, store.StatePending, store.StatePending, store.StatePending}
	for i, w := range want {
		if rows[i].State != w {
			t.Errorf("job %d of the call inserted %s, want %s", i, rows[i].State, w)
		}
		got := e.get(rows[i].ID)
		wantState(t, got, w)
		// What Insert returned is the row as stored.
		if !slices.Equal(rows[i].DependsOn, got.DependsOn) || rows[i].Workflow != got.Workflow || rows[i].Step != got.Step ||
			rows[i].IgnoreFailedDeps != got.IgnoreFailedDeps || !rows[i].RunAt.Equal(got.RunAt) ||
			!rows[i].CreatedAt.Equal(got.CreatedAt) || !rows[i].FinalizedAt.Equal(got.FinalizedAt) || len(rows[i].Errors) != len(got.Errors) {
			t.Errorf("job %d of the call: Insert returned %+v, the store holds %+v", i, rows[i], got)
		}
	}
	wantDepCancelled(t, e, rows[4].ID, failed.ID, store.StateDiscarded)
	if got := e.get(rows[8].ID).DependsOn; !slices.Equal(got, []int64{r1.ID, r2.ID}) {
		t.Errorf("job 8 DependsOn %v, want [%d %d]", got, r1.ID, r2.ID)
	}
	e.finish(r1.ID, store.StateCompleted)
	wantState(t, e.get(rows[0].ID), store.StateAvailable)
	wantPending(t, e, rows[2].ID, rows[6].ID, rows[7].ID, rows[8].ID)
	e.finish(r2.ID, store.StateCompleted)
	for _, i := range []int{2, 6, 8} {
		wantState(t, e.get(rows[i].ID), store.StateAvailable)
	}
	wantPending(t, e, rows[7].ID)
	e.finish(rows[0].ID, store.StateCompleted)
	wantPending(t, e, rows[7].ID) // 1 is still to complete
	e.finish(rows[1].ID, store.StateCompleted)
	wantState(t, e.get(rows[7].ID), store.StateAvailable)
	if c := e.stats()["default"].Counts; c[store.StatePending] != 0 {
		t.Errorf("counts %v, want none pending", c)
	}
}

// One completion releases many dependents, and a job waiting for many is released by the last.
func testFanOutFanIn(t *testing.T, e *env) {
	const n = 300
	root := e.insertOne(job("k"))
	ps := make([]store.InsertParams, n+1)
	for i := range n {
		ps[i] = after(root.ID)
		ps[n].DependsOnIndex = append(ps[n].DependsOnIndex, i)
	}
	ps[n].Kind, ps[n].Queue, ps[n].Args, ps[n].MaxAttempts = "k", "sink", []byte(`{}`), 1
	rows := e.insert(ps...)
	sink := rows[n]
	e.finish(root.ID, store.StateCompleted)
	if c := e.stats()["default"].Counts; c[store.StateAvailable] != n || c[store.StatePending] != 0 {
		t.Fatalf("after the root: counts %v, want %d available", c, n)
	}
	for done := 0; done < n; {
		claimed := e.claim("default", 100)
		outs := make([]store.Outcome, len(claimed))
		for i, c := range claimed {
			outs[i] = store.Outcome{ID: c.ID, Fence: c.Fence, State: store.StateCompleted}
		}
		e.complete(outs...)
		done += len(claimed)
		if got := e.get(sink.ID).State; (done < n) != (got == store.StatePending) {
			t.Fatalf("sink is %s after %d of %d", got, done, n)
		}
	}
	wantState(t, e.get(sink.ID), store.StateAvailable)
}

// Dependencies that end in one call, one completed and one failed, in either order, cancel
// their dependent with the failed one's name; one that waited for the completed one alone is
// released by the same call.
func testMixedEndsInOneCall(t *testing.T, e *env) {
	for _, failedFirst := range []bool{false, true} {
		a, b := e.insertOne(job("k")), e.insertOne(job("k"))
		both, onlyA := e.insertOne(after(a.ID, b.ID)), e.insertOne(after(a.ID))
		claimed := e.claim("default", 10)
		if len(claimed) != 2 {
			t.Fatalf("claimed %v, want jobs %d and %d", ids(claimed), a.ID, b.ID)
		}
		outs := make([]store.Outcome, 0, 2)
		for _, c := range claimed {
			o := store.Outcome{ID: c.ID, Fence: c.Fence, State: store.StateCompleted}
			if c.ID == b.ID {
				o.State = store.StateDiscarded
			}
			outs = append(outs, o)
		}
		if failedFirst != (outs[0].ID == b.ID) {
			outs[0], outs[1] = outs[1], outs[0]
		}
		e.complete(outs...)
		wantDepCancelled(t, e, both.ID, b.ID, store.StateDiscarded)
		wantState(t, e.get(onlyA.ID), store.StateAvailable)
		e.finish(onlyA.ID, store.StateCompleted)
	}
}

// Workflows counts steps by state, newest workflow first, one by id, in pages; List finds a
// workflow's steps.
func testWorkflowsListed(t *testing.T, e *env) {
	step := func(wf string, deps ...int) store.InsertParams {
		p := job("k")
		p.Workflow, p.DependsOnIndex = wf, deps
		return p
	}
	e.insert(step("wf-a"), step("wf-a", 0), step("wf-a", 0))
	e.advance(time.Second)
	b := e.insert(step("wf-b"), step("wf-b", 0))
	e.insertOne(job("k"))

	all, err := e.s.Workflows(e.ctx, store.WorkflowListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].ID != "wf-b" || all[1].ID != "wf-a" {
		t.Fatalf("Workflows = %+v, want wf-b then wf-a", all)
	}
	wantTime(t, "wf-b CreatedAt", all[0].CreatedAt, e.now())
	if c := all[1].Counts; c[store.StateAvailable] != 1 || c[store.StatePending] != 2 {
		t.Errorf("wf-a counts %v, want 1 available, 2 pending", c)
	}
	page, err := e.s.Workflows(e.ctx, store.WorkflowListParams{Before: "wf-b", Limit: 1})
	if err != nil || len(page) != 1 || page[0].ID != "wf-a" {
		t.Errorf("page after wf-b = %+v, %v; want wf-a", page, err)
	}
	one, err := e.s.Workflows(e.ctx, store.WorkflowListParams{ID: "wf-b"})
	if err != nil || len(one) != 1 || one[0].Counts[store.StatePending] != 1 {
		t.Errorf("wf-b alone = %+v, %v", one, err)
	}
	if none, err := e.s.Workflows(e.ctx, store.WorkflowListParams{ID: "wf-none"}); err != nil || len(none) != 0 {
		t.Errorf("unknown workflow = %+v, %v; want none", none, err)
	}
	steps := e.list(store.ListParams{Workflow: "wf-b"})
	if !slices.Equal(ids(steps), ids(b)) {
		t.Errorf("List(Workflow wf-b) = %v, want %v", ids(steps), ids(b))
	}
}

// A workflow whose steps are deleted or pruned is listed no more, and a step deleted is not
// among the workflow's steps.
func testWorkflowGoesWithSteps(t *testing.T, e *env) {
	step := func() store.InsertParams {
		p := job("k")
		p.Workflow = "wf-gone"
		return p
	}
	rows := e.insert(step(), step(), step())
	if err := e.s.Delete(e.ctx, rows[0].ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if got := e.list(store.ListParams{Workflow: "wf-gone"}); !slices.Equal(ids(got), ids(rows[1:])) {
		t.Errorf("steps after a delete = %v, want %v", ids(got), ids(rows[1:]))
	}
	one, err := e.s.Workflows(e.ctx, store.WorkflowListParams{ID: "wf-gone"})
	if err != nil || len(one) != 1 || one[0].Counts[store.StateAvailable] != 2 {
		t.Fatalf("after a delete: %+v, %v; want 2 available steps", one, err)
	}
	e.finish(rows[1].ID, store.StateCompleted)
	e.finish(rows[2].ID, store.StateCompleted)
	e.advance(time.Hour)
	if n, err := e.s.Prune(e.ctx, store.PruneParams{States: []store.State{store.StateCompleted}, Before: e.now()}); err != nil || n != 2 {
		t.Fatalf("prune: %d, %v; want the 2 steps", n, err)
	}
	if all, err := e.s.Workflows(e.ctx, store.WorkflowListParams{}); err != nil || len(all) != 0 {
		t.Errorf("after pruning every step: %+v, %v; want no workflow", all, err)
	}
	if got := e.list(store.ListParams{Workflow: "wf-gone"}); len(got) != 0 {
		t.Errorf("steps after the prune = %v, want none", ids(got))
	}
}

// RetryWorkflow runs the failed steps again in dependency order: the failed one now, those
// cancelled for it waiting again; completed steps stay completed.
func testRetryWorkflow(t *testing.T, e *env) {
	rows := e.insert(wfStep("a"), wfStep("b", 0), wfStep("c", 1), wfStep("d", 0), wfStep("e", 2, 3))
	a, b, c, d, last := rows[0].ID, rows[1].ID, rows[2].ID, rows[3].ID, rows[4].ID
	e.finish(a, store.StateCompleted)
	e.finish(d, store.StateCompleted)
	e.finish(b, store.StateDiscarded)
	wantDepCancelled(t, e, c, b, store.StateDiscarded)
	wantDepCancelled(t, e, last, c, store.StateCancelled)

	if _, err := e.s.RetryWorkflow(e.ctx, "wf-none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RetryWorkflow(unknown) = %v, want ErrNotFound", err)
	}
	e.advance(time.Second)
	e.retryWorkflow(b, c, last)
	rb := e.get(b)
	if rb.State != store.StateAvailable || rb.MaxAttempts != 2 || !rb.FinalizedAt.IsZero() {
		t.Errorf("retried b: %s, max attempts %d, finalized %v; want available with one more attempt", rb.State, rb.MaxAttempts, rb.FinalizedAt)
	}
	wantPending(t, e, c, last)
	wantState(t, e.get(a), store.StateCompleted)
	if counts := e.stats()["default"].Counts; counts[store.StatePending] != 2 || counts[store.StateCancelled] != 0 {
		t.Errorf("counts %v, want 2 pending and none cancelled", counts)
	}
	e.finish(b, store.StateCompleted)
	wantState(t, e.get(c), store.StateAvailable)
	wantPending(t, e, last)
	e.finish(c, store.StateCompleted)
	wantState(t, e.get(last), store.StateAvailable)
}

// A step that RetryWorkflow makes wait for one job is released by that job's completion, however
// many it waited for before: here two, both ended by one call (one failed, which the step
// ignores), so nothing counted the step down before its release.
func testRetriedStepWaitsForOne(t *testing.T, e *env) {
	x := wfStep("x", 0, 1)
	x.IgnoreFailedDeps = true
	rows := e.insert(wfStep("a"), wfStep("b"), x)
	a, b, rx := rows[0].ID, rows[1].ID, rows[2].ID
	outcomes := make([]store.Outcome, 0, 2)
	for _, c := range e.claim("default", 2) {
		o := store.Outcome{ID: c.ID, Fence: c.Fence, State: store.StateCompleted}
		if c.ID == b {
			o.State = store.StateDiscarded
		}
		outcomes = append(outcomes, o)
	}
	if applied := e.complete(outcomes...); len(applied) != 2 || !applied[0] || !applied[1] {
		t.Fatalf("ending a and b in one call: applied %v", applied)
	}
	wantState(t, e.get(a), store.StateCompleted)
	wantState(t, e.get(rx), store.StateAvailable)
	e.finish(rx, store.StateDiscarded)

	e.retryWorkflow(b, rx)
	wantPending(t, e, rx)
	e.finish(b, store.StateCompleted)
	wantState(t, e.get(rx), store.StateAvailable)
}

// RetryWorkflow leaves a step that waited for a job outside the workflow that failed for good as
// it is, and the steps that wait for it: run again, it would wait for an end that has come and
// gone. A step that ignores failed dependencies runs again, and a step that failed alone too.
// Once the outside job is retried and completes, the next RetryWorkflow runs them.
func testRetryWorkflowOutsideFailed(t *testing.T, e *env) {
	outside := e.insert(job("k"))[0].ID
	a, b, c := wfStep("a"), wfStep("b", 0), wfStep("c")
	a.DependsOn = []int64{outside}
	ig := wfStep("ignores")
	ig.DependsOn, ig.IgnoreFailedDeps = []int64{outside}, true
	rows := e.insert(a, b, c, ig)
	ra, rb, rc, rig := rows[0].ID, rows[1].ID, rows[2].ID, rows[3].ID
	e.finish(outside, store.StateDiscarded)
	wantDepCancelled(t, e, ra, outside, store.StateDiscarded)
	wantDepCancelled(t, e, rb, ra, store.StateCancelled)
	e.finish(rc, store.StateDiscarded)
	e.finish(rig, store.StateDiscarded)

	e.retryWorkflow(rc, rig)
	wantState(t, e.get(ra), store.StateCancelled)
	wantState(t, e.get(rb), store.StateCancelled)
	wantState(t, e.get(rc), store.StateAvailable)
	wantState(t, e.get(rig), store.StateAvailable)

	// Once the outside job has run again and completed, the workflow's next retry takes them.
	if _, err := e.s.Retry(e.ctx, outside); err != nil {
		t.Fatal(err)
	}
	e.finish(outside, store.StateCompleted)
	e.retryWorkflow(ra, rb)
	wantState(t, e.get(ra), store.StateAvailable)
	wantPending(t, e, rb)
}

// A batch's callback (a step that ignores failed dependencies) still waiting for some of its
// jobs when RetryWorkflow runs a failed one again waits for that one's new end too: it runs
// once every job has ended, never while a job of its batch runs.
func testRetryWorkflowOpenBatch(t *testing.T, e *env) {
	cb := wfStep("callback", 0, 1)
	cb.IgnoreFailedDeps = true
	rows := e.insert(wfStep("job-1"), wfStep("job-2"), cb)
	j1, j2, rcb := rows[0].ID, rows[1].ID, rows[2].ID
	e.finish(j1, store.StateDiscarded)
	wantPending(t, e, rcb)
	e.retryWorkflow(j1)
	e.finish(j2, store.StateCompleted)
	if got := e.get(j1).State; got.Final() {
		t.Fatalf("job-1 is %s after its retry, want it not ended yet", got)
	}
	wantPending(t, e, rcb)
	e.finish(j1, store.StateCompleted)
	wantState(t, e.get(rcb), store.StateAvailable)
}

// A step made to wait again by RetryWorkflow keeps its RunAt: released before it, it is
// scheduled, as at its insert (ReleasedIntoItsRunAt).
func testRetriedStepKeepsRunAt(t *testing.T, e *env) {
	b := wfStep("b", 0)
	b.RunAt = e.now().Add(time.Hour)
	rows := e.insert(wfStep("a"), b)
	a, rb := rows[0].ID, rows[1].ID
	e.finish(a, store.StateDiscarded)
	wantDepCancelled(t, e, rb, a, store.StateDiscarded)
	e.retryWorkflow(a, rb)
	wantPending(t, e, rb)
	e.finish(a, store.StateCompleted)
	got := e.get(rb)
	wantState(t, got, store.StateScheduled)
	wantTime(t, "RunAt", got.RunAt, b.RunAt)
}

// The same with two failed jobs of three run again at once: the callback waits for both new
// ends, counted once each, and for the job that had not ended.
func testRetryWorkflowOpenBatchTwo(t *testing.T, e *env) {
	cb := wfStep("callback", 0, 1, 2)
	cb.IgnoreFailedDeps = true
	rows := e.insert(wfStep("job-1"), wfStep("job-2"), wfStep("job-3"), cb)
	j1, j2, j3, rcb := rows[0].ID, rows[1].ID, rows[2].ID, rows[3].ID
	e.finish(j1, store.StateDiscarded)
	e.finish(j2, store.StateCancelled)
	wantPending(t, e, rcb)
	e.retryWorkflow(j1, j2)
	e.finish(j3, store.StateCompleted)
	wantPending(t, e, rcb)
	e.finish(j1, store.StateCompleted)
	wantPending(t, e, rcb)
	e.finish(j2, store.StateDiscarded)
	wantState(t, e.get(rcb), store.StateAvailable)
}
