package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

var limitTests = map[string]func(*testing.T, *env){
	"SetAndList":          testLimitSetAndList,
	"Invalid":             testLimitInvalid,
	"QueueOne":            testLimitQueueOne,
	"KindAcrossQueues":    testLimitKindAcrossQueues,
	"QueueAndKind":        testLimitQueueAndKind,
	"Removed":             testLimitRemoved,
	"Lowered":             testLimitLowered,
	"ExpiredLeaseCounts":  testLimitExpiredLease,
	"Rate":                testLimitRate,
	"RateCountsEachStart": testLimitRateStarts,
	"RateAndMaxRunning":   testLimitRateAndMax,
	"RateSetAgain":        testLimitRateSetAgain,
	"Concurrent":          testLimitConcurrent,
	"Usage":               testLimitUsage,
}

func (e *env) setLimit(l store.Limit) {
	e.t.Helper()
	if err := e.s.SetLimit(e.ctx, l); err != nil {
		e.t.Fatalf("SetLimit(%+v): %v", l, err)
	}
}

func (e *env) limits() []store.Limit {
	e.t.Helper()
	ls, err := e.s.ListLimits(e.ctx)
	if err != nil {
		e.t.Fatalf("ListLimits: %v", err)
	}
	return ls
}

// claimFrom claims up to max jobs of queue as owner, for kinds k, a and b.
func (e *env) claimFrom(queue, owner string, max int) []*store.JobRow {
	e.t.Helper()
	return e.claimParams(store.ClaimParams{Queue: queue, Kinds: kinds, Max: max, Owner: owner, LeaseFor: time.Minute})
}

func (e *env) done(jobs ...*store.JobRow) {
	e.t.Helper()
	for _, j := range jobs {
		e.completeOK(store.Outcome{ID: j.ID, Fence: j.Fence, State: store.StateCompleted})
	}
}

// wantClaimed fails unless got holds exactly the jobs want, in that order.
func wantClaimed(t *testing.T, what string, got []*store.JobRow, want ...*store.JobRow) {
	t.Helper()
	if !slices.Equal(ids(got), ids(want)) {
		t.Fatalf("%s claimed %v, want %v", what, ids(got), ids(want))
	}
}

func kindIn(kind, queue string) store.InsertParams {
	p := job(kind)
	p.Queue = queue
	return p
}

func testLimitSetAndList(t *testing.T, e *env) {
	if got := e.limits(); len(got) != 0 {
		t.Fatalf("a new store has limits %+v", got)
	}
	set := []store.Limit{
		{Scope: store.LimitQueue, Name: "mail", MaxRunning: 5},
		{Scope: store.LimitKind, Name: "b", Rate: 10, Period: 90 * time.Second},
		{Scope: store.LimitKind, Name: "B", MaxRunning: 1, Rate: 3, Period: time.Hour},
		{Scope: store.LimitQueue, Name: "api", MaxRunning: 2},
		{Scope: store.LimitQueue, Name: "mail", MaxRunning: 7, Rate: 100, Period: time.Minute}, // replaces
	}
	for _, l := range set {
		e.setLimit(l)
	}
	// By scope then name, in byte order: "B" before "b", whatever the database's collation.
	want := []store.Limit{set[2], set[1], set[3], set[4]}
	if got := e.limits(); !slices.Equal(got, want) {
		t.Fatalf("ListLimits = %+v\nwant %+v", got, want)
	}
}

// Invalid limits are refused with ErrInvalidLimit, and nothing is stored.
func testLimitInvalid(t *testing.T, e *env) {
	for _, l := range []store.Limit{
		{Scope: "node", Name: "x", MaxRunning: 1},
		{Scope: "", Name: "x", MaxRunning: 1},
		{Scope: store.LimitQueue, Name: "", MaxRunning: 1},
		{Scope: store.LimitQueue, Name: "q", MaxRunning: -1},
		{Scope: store.LimitKind, Name: "k", Rate: -1, Period: time.Second},
		{Scope: store.LimitKind, Name: "k", Rate: 5},
		{Scope: store.LimitKind, Name: "k", Rate: 5, Period: -time.Second},
		{Scope: store.LimitKind, Name: "k", MaxRunning: 1, Period: time.Second},
	} {
		if err := e.s.SetLimit(e.ctx, l); !errors.Is(err, store.ErrInvalidLimit) {
			t.Errorf("SetLimit(%+v) = %v, want ErrInvalidLimit", l, err)
		}
	}
	if got := e.limits(); len(got) != 0 {
		t.Fatalf("invalid limits were stored: %+v", got)
	}
}

// MaxRunning 1 on a queue: however many claimers ask for however many jobs, one runs; the next
// starts when it ends. Other queues are not held back.
func testLimitQueueOne(t *testing.T, e *env) {
	e.setLimit(store.Limit{Scope: store.LimitQueue, Name: "q", MaxRunning: 1})
	js := e.insert(inQueue("q"), inQueue("q"), inQueue("q"))
	first := e.claimFrom("q", "node-a", 10)
	wantClaimed(t, "node-a", first, js[0])
	wantClaimed(t, "node-b while one runs", e.claimFrom("q", "node-b", 10))
	wantClaimed(t, "node-a while one runs", e.claimFrom("q", "node-a", 10))
	other := e.insertOne(inQueue("other"))
	wantClaimed(t, "another queue", e.claimFrom("other", "node-a", 10), other)

	e.done(first...)
	second := e.claimFrom("q", "node-b", 10)
	wantClaimed(t, "node-b after the first ended", second, js[1])
	wantClaimed(t, "node-a while the second runs", e.claimFrom("q", "node-a", 10))
}

// A kind limit counts the kind's jobs in every queue, and holds back only that kind.
func testLimitKindAcrossQueues(t *testing.T, e *env) {
	e.setLimit(store.Limit{Scope: store.LimitKind, Name: "a", MaxRunning: 1})
	a1 := e.insertOne(kindIn("a", "q1"))
	a2, b := e.insertOne(kindIn("a", "q2")), e.insertOne(kindIn("b", "q2"))
	running := e.claimFrom("q1", "node-a", 10)
	wantClaimed(t, "q1", running, a1)
	wantClaimed(t, "q2 while an a runs in q1", e.claimFrom("q2", "node-b", 10), b)

	// A failed attempt ends the run: the slot is free while the job waits for its retry.
	e.completeOK(store.Outcome{ID: a1.ID, Fence: running[0].Fence, State: store.StateRetryable,
		RunAt: e.now().Add(time.Hour), Error: &store.AttemptError{Error: "boom"}})
	wantClaimed(t, "q2 after the a in q1 failed", e.claimFrom("q2", "node-b", 10), a2)
}

// With a queue limit and a kind limit, both hold; jobs a limit holds back do not block the jobs
// behind them in claim order.
func testLimitQueueAndKind(t *testing.T, e *env) {
	e.setLimit(store.Limit{Scope: store.LimitQueue, Name: "q", MaxRunning: 3})
	e.setLimit(store.Limit{Scope: store.LimitKind, Name: "a", MaxRunning: 1})
	js := e.insert(kindIn("a", "q"), kindIn("a", "q"), kindIn("a", "q"),
		kindIn("b", "q"), kindIn("b", "q"), kindIn("b", "q"), kindIn("b", "q"))
	a, b := js[:3], js[3:]
	got := e.claimFrom("q", "n", 10)
	wantClaimed(t, "the first claim", got, a[0], b[0], b[1])
	wantClaimed(t, "a full queue", e.claimFrom("q", "n", 10))

	e.done(got[0]) // an a ended: the queue has room for one, and kind a too
	got = e.claimFrom("q", "n", 10)
	wantClaimed(t, "after the a ended", got, a[1])
	e.done(got[0], e.get(b[0].ID)) // two slots of the queue, but one a
	wantClaimed(t, "after an a and a b ended", e.claimFrom("q", "n", 10), a[2], b[2])
}

// A limit set to nothing is gone: ListLimits does not show it and claims take what they ask.
func testLimitRemoved(t *testing.T, e *env) {
	e.setLimit(store.Limit{Scope: store.LimitQueue, Name: "default", MaxRunning: 1})
	e.setLimit(store.Limit{Scope: store.LimitKind, Name: "k", Rate: 1, Period: time.Hour})
	e.insert(job("k"), job("k"), job("k"), job("k"))
	if got := e.claim("default", 10); len(got) != 1 {
		t.Fatalf("claimed %d under the limits, want 1", len(got))
	}
	e.setLimit(store.Limit{Scope: store.LimitQueue, Name: "default"})
	if got := e.claim("default", 10); len(got) != 0 {
		t.Fatalf("the rate limit left let %d start", len(got))
	}
	e.setLimit(store.Limit{Scope: store.LimitKind, Name: "k"})
	if got := e.limits(); len(got) != 0 {
		t.Fatalf("removed limits listed: %+v", got)
	}
	if got := e.claim("default", 10); len(got) != 3 {
		t.Fatalf("claimed %d after the limits were removed, want the 3 left", len(got))
	}
	// A rate set again begins with an empty window: the start under the old one is forgotten.
	e.insert(job("k"), job("k"))
	e.setLimit(store.Limit{Scope: store.LimitKind, Name: "k", Rate: 1, Period: time.Hour})
	if got := e.claim("default", 10); len(got) != 1 {
		t.Fatalf("claimed %d under a rate set again, want 1", len(got))
	}
}

// A MaxRunning lowered below the number running stops nothing, and claims wait until fewer run.
func testLimitLowered(t *testing.T, e *env) {
	e.setLimit(store.Limit{Scope: store.LimitQueue, Name: "default", MaxRunning: 3})
	e.insert(job("k"), job("k"), job("k"), job("k"))
	running := e.claim("default", 10)
	if len(running) != 3 {
		t.Fatalf("claimed %d, want 3", len(running))
	}
	e.setLimit(store.Limit{Scope: store.LimitQueue, Name: "default", MaxRunning: 1})
	for _, j := range running {
		wantState(t, e.get(j.ID), store.StateRunning)
	}
	e.done(running[:2]...)
	if got := e.claim("default", 10); len(got) != 0 {
		t.Fatalf("claimed %d with 1 running under MaxRunning 1", len(got))
	}
	e.done(running[2])
	if got := e.claim("default", 10); len(got) != 1 {
		t.Fatalf("claimed %d once none ran, want 1", len(got))
	}
}

// A job whose lease expired may still run on its node: it counts until it is rescued.
func testLimitExpiredLease(t *testing.T, e *env) {
	e.setLimit(store.Limit{Scope: store.LimitKind, Name: "k", MaxRunning: 1})
	e.insert(job("k"), job("k"))
	e.claimAs("lost", time.Second, 10)
	e.advance(time.Minute)
	if got := e.claimAs("alive", time.Minute, 10); len(got) != 0 {
		t.Fatalf("claimed %v beside a job whose lease expired unrescued", ids(got))
	}
	if got := e.rescue(10); len(got) != 1 {
		t.Fatalf("rescued %d, want 1", len(got))
	}
	if got := e.claimAs("alive", time.Minute, 10); len(got) != 1 {
		t.Fatalf("claimed %d after the rescue, want 1", len(got))
	}
}
