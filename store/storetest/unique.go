package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

var uniqueTests = map[string]func(*testing.T, *env){
	"Duplicate":          testUniqueDuplicate,
	"FinalFreesKey":      testUniqueFinalFreesKey,
	"UniqueStates":       testUniqueStates,
	"InOneCall":          testUniqueInOneCall,
	"Supersede":          testSupersede,
	"SupersedeRunning":   testSupersedeRunning,
	"SupersedeInOneCall": testSupersedeInOneCall,
	"BackIntoAHeldKey":   testBackIntoAHeldKey,
	"ReleasedTogether":   testUniqueReleasedTogether,
	"SupersedeFinal":     testSupersedeFinal,
	"SupersededRunning":  testSupersededRunningGivesUpItsKey,
	"ConcurrentInserts":  testUniqueConcurrent,
	"OtherKeysUnrelated": testUniqueOtherKeys,
}

func keyed(key string) store.InsertParams {
	p := job("k")
	p.UniqueKey = key
	return p
}

func (e *env) count(p store.ListParams) int {
	e.t.Helper()
	return len(e.listAll(p))
}

func testUniqueDuplicate(t *testing.T, e *env) {
	first := e.insertResults(keyed("x"))[0]
	second := e.insertResults(keyed("x"))[0]
	if first.Duplicate || !second.Duplicate {
		t.Fatalf("Duplicate = %v, %v; want false, true", first.Duplicate, second.Duplicate)
	}
	if second.Job.ID != first.Job.ID {
		t.Fatalf("duplicate returned job %d, want the existing %d", second.Job.ID, first.Job.ID)
	}
	if second.Job.UniqueKey != "x" || second.Job.State != store.StateAvailable {
		t.Errorf("duplicate returned %+v", second.Job)
	}
	if n := e.count(store.ListParams{}); n != 1 {
		t.Fatalf("%d jobs, want 1", n)
	}
	// A running job still holds its key.
	e.claimOne()
	if !e.insertResults(keyed("x"))[0].Duplicate {
		t.Fatal("insert while the keyed job runs was not a duplicate")
	}
}

// By default only jobs that are not final hold their key.
func testUniqueFinalFreesKey(t *testing.T, e *env) {
	j := e.insertOne(keyed("x"))
	c := e.claimOne()
	e.completeOK(store.Outcome{ID: j.ID, Fence: c.Fence, State: store.StateCompleted})
	r := e.insertResults(keyed("x"))[0]
	if r.Duplicate || r.Job.ID == j.ID {
		t.Fatalf("insert after the keyed job completed: duplicate %v id %d", r.Duplicate, r.Job.ID)
	}
}

func testUniqueStates(t *testing.T, e *env) {
	p := keyed("x")
	p.UniqueStates = []store.State{store.StateAvailable, store.StateRunning, store.StateCompleted}
	j := e.insertOne(p)
	c := e.claimOne()
	e.completeOK(store.Outcome{ID: j.ID, Fence: c.Fence, State: store.StateCompleted})
	if r := e.insertResults(p)[0]; !r.Duplicate || r.Job.ID != j.ID {
		t.Fatalf("a completed job in UniqueStates did not hold its key: %+v", r)
	}
	// With UniqueStates that leave out available, an available job does not hold the key.
	q := keyed("y")
	q.UniqueStates = []store.State{store.StateCompleted}
	a := e.insertOne(q)
	if r := e.insertResults(q)[0]; r.Duplicate || r.Job.ID == a.ID {
		t.Fatalf("an available job held a key whose UniqueStates is [completed]: %+v", r)
	}
}

func testUniqueInOneCall(t *testing.T, e *env) {
	res := e.insertResults(keyed("x"), job("k"), keyed("x"), keyed("y"))
	if res[0].Duplicate || res[1].Duplicate || !res[2].Duplicate || res[3].Duplicate {
		t.Fatalf("Duplicate flags %v %v %v %v; want false false true false",
			res[0].Duplicate, res[1].Duplicate, res[2].Duplicate, res[3].Duplicate)
	}
	if res[2].Job.ID != res[0].Job.ID {
		t.Fatalf("in-call duplicate points to %d, want %d", res[2].Job.ID, res[0].Job.ID)
	}
	if n := e.count(store.ListParams{}); n != 3 {
		t.Fatalf("%d jobs, want 3", n)
	}
}

// Supersede replaces an older job that is not running yet: the old one ends cancelled.
func testSupersede(t *testing.T, e *env) {
	old := e.insertOne(keyed("x"))
	p := keyed("x")
	p.Supersede = true
	p.Args = []byte(`{"v":2}`)
	r := e.insertResults(p)[0]
	if r.Duplicate || r.Job.ID == old.ID {
		t.Fatalf("supersede: %+v; want a new job", r)
	}
	wantJSON(t, "new Args", r.Job.Args, p.Args)
	wantFinalized(t, e.get(old.ID), store.StateCancelled, e.now())
	if got := e.claimOne(); got.ID != r.Job.ID {
		t.Fatalf("claimed %d, want the new job %d", got.ID, r.Job.ID)
	}
	// The new job holds the key for plain inserts.
	if d := e.insertResults(keyed("x"))[0]; !d.Duplicate || d.Job.ID != r.Job.ID {
		t.Fatalf("insert after supersede: %+v; want a duplicate of %d", d, r.Job.ID)
	}
}

// A job superseded by a later job of the same call is reported as it ended, and counted once.
func testSupersedeInOneCall(t *testing.T, e *env) {
	p := keyed("x")
	p.Supersede = true
	res := e.insertResults(keyed("x"), p)
	if res[0].Duplicate || res[1].Duplicate || res[0].Job.ID == res[1].Job.ID {
		t.Fatalf("results %+v, %+v; want two new jobs", res[0], res[1])
	}
	wantFinalized(t, res[0].Job, store.StateCancelled, e.now())
	wantFinalized(t, e.get(res[0].Job.ID), store.StateCancelled, e.now())
	wantState(t, res[1].Job, store.StateAvailable)
	counts := e.stats()["default"].Counts
	if counts[store.StateCancelled] != 1 || counts[store.StateAvailable] != 1 {
		t.Fatalf("counts %v; want 1 cancelled, 1 available", counts)
	}
}

// A running job cannot be replaced: it is left to finish and the new one is inserted anyway.
func testSupersedeRunning(t *testing.T, e *env) {
	old := e.insertOne(keyed("x"))
	run := e.claimOne()
	p := keyed("x")
	p.Supersede = true
	r := e.insertResults(p)[0]
	if r.Duplicate || r.Job.ID == old.ID {
		t.Fatalf("supersede of a running job: %+v; want a new job", r)
	}
	wantState(t, r.Job, store.StateAvailable)
	if got := e.get(old.ID); got.State != store.StateRunning || got.Fence != run.Fence {
		t.Fatalf("the running job was touched: %+v", got)
	}
	if !e.complete(store.Outcome{ID: old.ID, Fence: run.Fence, State: store.StateCompleted})[0] {
		t.Fatal("the running job could not complete")
	}
}

// Concurrent inserts of one key create exactly one job.
func testUniqueConcurrent(t *testing.T, e *env) {
	const n = 50
	var wg sync.WaitGroup
	res := make([]store.InsertResult, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			var r []store.InsertResult
			r, errs[i] = e.s.Insert(e.ctx, []store.InsertParams{keyed("once")})
			if errs[i] == nil {
				res[i] = r[0]
			}
		})
	}
	wg.Wait()
	fresh := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("insert %d: %v", i, errs[i])
		}
		if !res[i].Duplicate {
			fresh++
		}
		if res[i].Job.ID != res[0].Job.ID {
			t.Fatalf("insert %d returned job %d, insert 0 job %d", i, res[i].Job.ID, res[0].Job.ID)
		}
	}
	if fresh != 1 {
		t.Fatalf("%d inserts were not duplicates, want 1", fresh)
	}
	if c := e.count(store.ListParams{}); c != 1 {
		t.Fatalf("%d jobs, want 1", c)
	}
}

func testUniqueOtherKeys(t *testing.T, e *env) {
	e.insert(keyed("a"), keyed("b"), job("k"), job("k"))
	if n := e.count(store.ListParams{}); n != 4 {
		t.Fatalf("%d jobs, want 4", n)
	}
}

// A job that gave up its key (it ran, with running not among its unique states; or it ended)
// and comes back into a state that would hold it while a newer job holds it — handed back,
// rescued, retried, released or cancelled by its dependencies — comes back without the key: the
// move succeeds, and the newer job keeps it.
func testBackIntoAHeldKey(t *testing.T, e *env) {
	newer := func(p store.InsertParams) int64 {
		t.Helper()
		r := e.insertResults(p)[0]
		if r.Duplicate {
			t.Fatalf("the key was still held: %+v", r.Job)
		}
		return r.Job.ID
	}
	wantHolder := func(p store.InsertParams, id int64) {
		t.Helper()
		if r := e.insertResults(p)[0]; !r.Duplicate || r.Job.ID != id {
			t.Fatalf("insert of the key: duplicate %v of %d; want a duplicate of the newer job %d", r.Duplicate, r.Job.ID, id)
		}
	}

	// Handed back.
	back := keyed("back")
	back.UniqueStates = []store.State{store.StateAvailable}
	a := e.insertOne(back)
	ca := e.claimOne()
	b := newer(back)
	if !e.complete(store.Outcome{ID: a.ID, Fence: ca.Fence, State: store.StateAvailable, RefundAttempt: true})[0] {
		t.Fatal("hand-back not applied")
	}
	wantState(t, e.get(a.ID), store.StateAvailable)
	wantHolder(back, b)

	// Rescued.
	lost := keyed("lost")
	lost.Queue = "q-lost"
	lost.UniqueStates = []store.State{store.StateAvailable, store.StateRetryable}
	l := e.insertOne(lost)
	e.claimParams(store.ClaimParams{Queue: "q-lost", Kinds: []string{"k"}, Max: 1, Owner: "dead", LeaseFor: time.Second})
	m := newer(lost)
	e.advance(time.Minute)
	e.rescue(10)
	wantState(t, e.get(l.ID), store.StateRetryable)
	wantHolder(lost, m)

	// Retried.
	old := keyed("old")
	o := e.insertOne(old)
	e.cancel(o.ID)
	n := newer(old)
	e.retry(o.ID)
	wantState(t, e.get(o.ID), store.StateAvailable)
	wantHolder(old, n)

	// Released by its dependency, and cancelled by one: a job that did not hold its key while
	// it waited.
	dep := e.insertOne(job("k"))
	released := keyed("released")
	released.UniqueStates, released.DependsOn = []store.State{store.StateAvailable}, []int64{dep.ID}
	r := e.insertOne(released)
	// The newer holders wait in a queue of their own, where finish does not claim them.
	released.DependsOn, released.Queue = nil, "q-held"
	rn := newer(released)
	failing := e.insertOne(job("k"))
	doomed := keyed("doomed")
	doomed.UniqueStates, doomed.DependsOn = []store.State{store.StateAvailable, store.StateCancelled}, []int64{failing.ID}
	d := e.insertOne(doomed)
	doomed.DependsOn, doomed.Queue = nil, "q-held"
	dn := newer(doomed)
	e.finish(dep.ID, store.StateCompleted)
	wantState(t, e.get(r.ID), store.StateAvailable)
	wantHolder(released, rn)
	e.finish(failing.ID, store.StateDiscarded)
	wantState(t, e.get(d.ID), store.StateCancelled)
	wantHolder(doomed, dn)
}

// Two jobs waiting for the same dependency with the same key, neither holding it while it waits,
// are released together: the release succeeds, both are available, and one of them holds the
// key.
func testUniqueReleasedTogether(t *testing.T, e *env) {
	dep := e.insertOne(job("k"))
	twin := keyed("twin")
	twin.UniqueStates, twin.DependsOn, twin.Queue = []store.State{store.StateAvailable}, []int64{dep.ID}, "q-twins"
	a, b := e.insertOne(twin), e.insertOne(twin)
	if a.ID == b.ID {
		t.Fatalf("the second twin is a duplicate of the first: %+v", b)
	}
	e.finish(dep.ID, store.StateCompleted)
	wantState(t, e.get(a.ID), store.StateAvailable)
	wantState(t, e.get(b.ID), store.StateAvailable)
	twin.DependsOn = nil
	r := e.insertResults(twin)[0]
	if !r.Duplicate || (r.Job.ID != a.ID && r.Job.ID != b.ID) {
		t.Fatalf("insert of the key after the release: %+v; want a duplicate of job %d or %d", r, a.ID, b.ID)
	}
}

// A finished job that holds its key (completed is among its unique states) cannot be replaced:
// a superseding insert is a duplicate of it.
func testSupersedeFinal(t *testing.T, e *env) {
	p := keyed("x")
	p.UniqueStates = []store.State{store.StateAvailable, store.StateRunning, store.StateCompleted}
	j := e.insertOne(p)
	c := e.claimOne()
	e.completeOK(store.Outcome{ID: j.ID, Fence: c.Fence, State: store.StateCompleted})
	p.Supersede = true
	if r := e.insertResults(p)[0]; !r.Duplicate || r.Job.ID != j.ID {
		t.Fatalf("superseding a completed holder: duplicate %v, job %d; want a duplicate of %d", r.Duplicate, r.Job.ID, j.ID)
	}
	if n := e.count(store.ListParams{}); n != 1 {
		t.Fatalf("%d jobs, want 1", n)
	}
}

// A running job that was superseded runs on without its key: once the newer job has finished,
// the key is free.
func testSupersededRunningGivesUpItsKey(t *testing.T, e *env) {
	e.insertOne(keyed("x"))
	e.claimOne()
	p := keyed("x")
	p.Supersede = true
	b := e.insertResults(p)[0].Job
	cb := e.claimOne()
	if cb.ID != b.ID {
		t.Fatalf("claimed %d, want the superseding job %d", cb.ID, b.ID)
	}
	e.completeOK(store.Outcome{ID: b.ID, Fence: cb.Fence, State: store.StateCompleted})
	if r := e.insertResults(keyed("x"))[0]; r.Duplicate {
		t.Fatalf("after the superseding job completed, an insert is a duplicate of job %d (%s)", r.Job.ID, r.Job.State)
	}
}
