package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

var adminTests = map[string]func(*testing.T, *env){
	"GetNotFound":       testGetNotFound,
	"ListFilters":       testListFilters,
	"ListPages":         testListPages,
	"ListDefaultLimit":  testListDefaultLimit,
	"Cancel":            testCancel,
	"Retry":             testRetry,
	"Delete":            testDelete,
	"Prune":             testPrune,
	"PruneEmptiesQueue": testPruneEmptiesQueue,
	"RetryExpired":      testRetryExpired,
}

func testGetNotFound(t *testing.T, e *env) {
	if _, err := e.s.Get(e.ctx, 12345); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(unknown) = %v, want ErrNotFound", err)
	}
}

func testListFilters(t *testing.T, e *env) {
	q1a := e.insertOne(store.InsertParams{Kind: "a", Queue: "q1", Args: []byte(`{}`), MaxAttempts: 1})
	q1b := e.insertOne(store.InsertParams{Kind: "b", Queue: "q1", Args: []byte(`{}`), MaxAttempts: 1})
	q2a := e.insertOne(store.InsertParams{Kind: "a", Queue: "q2", Args: []byte(`{}`), MaxAttempts: 1})
	run := e.claim("q1", 1)[0] // q1a
	want := func(name string, p store.ListParams, want ...int64) {
		t.Helper()
		if got := ids(e.list(p)); !slices.Equal(got, want) {
			t.Errorf("%s: List = %v, want %v", name, got, want)
		}
	}
	want("all", store.ListParams{}, q1a.ID, q1b.ID, q2a.ID)
	want("queue", store.ListParams{Queue: "q1"}, q1a.ID, q1b.ID)
	want("kind", store.ListParams{Kind: "a"}, q1a.ID, q2a.ID)
	want("queue and kind", store.ListParams{Queue: "q2", Kind: "a"}, q2a.ID)
	want("running", store.ListParams{States: []store.State{store.StateRunning}}, run.ID)
	want("states", store.ListParams{States: []store.State{store.StateAvailable, store.StateCompleted}}, q1b.ID, q2a.ID)
	want("a state named twice", store.ListParams{States: []store.State{store.StateAvailable, store.StateAvailable}}, q1b.ID, q2a.ID)
	want("none", store.ListParams{Queue: "q3"})
	want("desc", store.ListParams{Desc: true}, q2a.ID, q1b.ID, q1a.ID)
}

func testListPages(t *testing.T, e *env) {
	ps := make([]store.InsertParams, 25)
	for i := range ps {
		ps[i] = job("k")
	}
	all := ids(e.insert(ps...))
	slices.Sort(all)

	var asc []int64
	for p := (store.ListParams{Limit: 10}); ; {
		page := e.list(p)
		if len(page) > 10 {
			t.Fatalf("page of %d, limit 10", len(page))
		}
		if len(page) == 0 {
			break
		}
		asc = append(asc, ids(page)...)
		p.AfterID = page[len(page)-1].ID
	}
	if !slices.Equal(asc, all) {
		t.Fatalf("ascending pages %v, want %v", asc, all)
	}

	var desc []int64
	for p := (store.ListParams{Limit: 7, Desc: true}); ; {
		page := e.list(p)
		if len(page) == 0 {
			break
		}
		desc = append(desc, ids(page)...)
		p.AfterID = page[len(page)-1].ID
	}
	slices.Reverse(desc)
	if !slices.Equal(desc, all) {
		t.Fatalf("descending pages (reversed) %v, want %v", desc, all)
	}
}

func testListDefaultLimit(t *testing.T, e *env) {
	ps := make([]store.InsertParams, 150)
	for i := range ps {
		ps[i] = job("k")
	}
	e.insert(ps...)
	if n := len(e.list(store.ListParams{})); n != 100 {
		t.Fatalf("List with zero Limit returned %d, want 100", n)
	}
}

func (e *env) cancel(id int64) *store.JobRow {
	e.t.Helper()
	j, err := e.s.Cancel(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Cancel(%d): %v", id, err)
	}
	return j
}

func testCancel(t *testing.T, e *env) {
	avail := e.insertOne(inQueue("other"))
	p := job("k")
	p.RunAt = e.now().Add(time.Hour)
	sched := e.insertOne(p)
	e.insert(job("k"), job("k"))
	run := e.claimOne()
	done := e.claimOne()
	done = e.completeOK(store.Outcome{ID: done.ID, Fence: done.Fence, State: store.StateCompleted})
	e.advance(time.Second)

	for _, id := range []int64{avail.ID, sched.ID} {
		got := e.cancel(id)
		wantFinalized(t, got, store.StateCancelled, e.now())
		sameJob(t, e.get(id), got)
	}
	if n := len(e.claim("other", 10)); n != 0 {
		t.Fatalf("claimed %d cancelled jobs", n)
	}

	got := e.cancel(run.ID)
	if got.State != store.StateRunning || !got.CancelRequested || !got.FinalizedAt.IsZero() {
		t.Errorf("cancelled running job: %+v; want running with CancelRequested", got)
	}
	if !e.get(run.ID).CancelRequested {
		t.Error("CancelRequested not stored")
	}
	// The node then ends it as cancelled.
	e.completeOK(store.Outcome{ID: run.ID, Fence: run.Fence, State: store.StateCancelled})

	sameJob(t, e.cancel(done.ID), done)
	sameJob(t, e.get(done.ID), done)

	if _, err := e.s.Cancel(e.ctx, 999999); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Cancel(unknown) = %v, want ErrNotFound", err)
	}
}

func (e *env) retry(id int64) *store.JobRow {
	e.t.Helper()
	j, err := e.s.Retry(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Retry(%d): %v", id, err)
	}
	return j
}

func testRetry(t *testing.T, e *env) {
	p := job("k")
	p.MaxAttempts = 1
	j := e.insertOne(p)
	c := e.claimOne()
	e.completeOK(store.Outcome{ID: j.ID, Fence: c.Fence, State: store.StateDiscarded,
		Error: &store.AttemptError{Attempt: 1, At: e.now(), Error: "dead"}})
	e.advance(time.Hour)

	got := e.retry(j.ID)
	wantState(t, got, store.StateAvailable)
	wantTime(t, "RunAt", got.RunAt, e.now())
	if !got.FinalizedAt.IsZero() || got.MaxAttempts != 2 || got.Attempt != 1 || len(got.Errors) != 1 {
		t.Errorf("retried discarded job: %+v; want not finalized, MaxAttempts 2, attempt 1, its error kept", got)
	}
	sameJob(t, e.get(j.ID), got)
	c = e.claimOne()
	if c.Attempt != 2 {
		t.Errorf("retried job claimed with attempt %d, want 2", c.Attempt)
	}
	if _, err := e.s.Retry(e.ctx, j.ID); !errors.Is(err, store.ErrJobRunning) {
		t.Errorf("Retry(running) = %v, want ErrJobRunning", err)
	}

	p.MaxAttempts = 5
	p.RunAt = e.now().Add(time.Hour)
	sched := e.insertOne(p)
	got = e.retry(sched.ID)
	wantState(t, got, store.StateAvailable)
	wantTime(t, "RunAt", got.RunAt, e.now())
	if got.MaxAttempts != 5 {
		t.Errorf("Retry changed MaxAttempts of a job with attempts left to %d", got.MaxAttempts)
	}
	if _, err := e.s.Retry(e.ctx, 999999); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Retry(unknown) = %v, want ErrNotFound", err)
	}
}

func testDelete(t *testing.T, e *env) {
	e.insert(job("k"), job("k"))
	run := e.claimOne()
	idle := e.list(store.ListParams{States: []store.State{store.StateAvailable}})[0]
	if err := e.s.Delete(e.ctx, run.ID); !errors.Is(err, store.ErrJobRunning) {
		t.Errorf("Delete(running) = %v, want ErrJobRunning", err)
	}
	e.get(run.ID)
	if err := e.s.Delete(e.ctx, idle.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := e.s.Get(e.ctx, idle.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after Delete = %v, want ErrNotFound", err)
	}
	if err := e.s.Delete(e.ctx, idle.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Delete twice = %v, want ErrNotFound", err)
	}
}

func testPrune(t *testing.T, e *env) {
	finish := func(state store.State) int64 {
		e.insertOne(job("k"))
		c := e.claimOne()
		e.completeOK(store.Outcome{ID: c.ID, Fence: c.Fence, State: state})
		return c.ID
	}
	old1, old2, oldDiscarded := finish(store.StateCompleted), finish(store.StateCompleted), finish(store.StateDiscarded)
	e.advance(time.Hour)
	cut := e.now()
	e.advance(time.Hour)
	recent := finish(store.StateCompleted)
	waiting := e.insertOne(job("k"))
	e.advance(time.Hour)

	prune := func(p store.PruneParams) int {
		n, err := e.s.Prune(e.ctx, p)
		if err != nil {
			t.Fatalf("Prune: %v", err)
		}
		return n
	}
	completed := []store.State{store.StateCompleted}
	if n := prune(store.PruneParams{States: completed, Before: cut, Limit: 1}); n != 1 {
		t.Fatalf("Prune(limit 1) = %d", n)
	}
	if n := prune(store.PruneParams{States: completed, Before: cut, Limit: 100}); n != 1 {
		t.Fatalf("second Prune = %d, want the 1 left", n)
	}
	for _, id := range []int64{old1, old2} {
		if _, err := e.s.Get(e.ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("pruned job %d: Get = %v", id, err)
		}
	}
	for _, id := range []int64{oldDiscarded, recent, waiting.ID} {
		e.get(id) // still there
	}
	if n := prune(store.PruneParams{Before: e.now(), Limit: 100}); n != 0 {
		t.Fatalf("Prune with no States = %d, want 0", n)
	}
	all := []store.State{store.StateCompleted, store.StateDiscarded, store.StateAvailable}
	if n := prune(store.PruneParams{States: all, Before: e.now(), Limit: 100}); n != 2 {
		t.Fatalf("Prune of everything finished = %d, want 2", n)
	}
	e.get(waiting.ID) // a job that is not final is never pruned
}

// A queue whose last job is pruned is no longer listed, and is listed again, with its job, once
// a job of the same kind is inserted into it.
func testPruneEmptiesQueue(t *testing.T, e *env) {
	p := job("k")
	p.Queue = "brief"
	e.insertOne(p)
	c := e.claim("brief", 1)
	if len(c) != 1 {
		t.Fatalf("claim took %d jobs", len(c))
	}
	e.completeOK(store.Outcome{ID: c[0].ID, Fence: c[0].Fence, State: store.StateCompleted})
	e.advance(time.Minute)
	if n, err := e.s.Prune(e.ctx, store.PruneParams{States: []store.State{store.StateCompleted}, Before: e.now(), Limit: 10}); err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	if q, ok := e.stats()["brief"]; ok {
		t.Fatalf("QueueStats lists the emptied queue: %+v", q)
	}
	e.insertOne(p)
	if q := e.stats()["brief"]; q.Counts[store.StateAvailable] != 1 {
		t.Fatalf("QueueStats after an insert into the emptied queue: %+v, want 1 available", q)
	}
}

// A retried job that had expired may run: its past expiry goes with the retry.
func testRetryExpired(t *testing.T, e *env) {
	p := job("k")
	p.ExpiresAt = e.now().Add(time.Minute)
	j := e.insertOne(p)
	e.advance(2 * time.Minute)
	e.claim("default", 1) // ends it expired
	wantState(t, e.get(j.ID), store.StateExpired)
	e.retry(j.ID)
	if got := e.claim("default", 1); len(got) != 1 || got[0].ID != j.ID {
		t.Fatalf("claim after the retry took %d jobs; job is %s", len(got), e.get(j.ID).State)
	}
}
