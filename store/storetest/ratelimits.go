package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

// Rate per Period over a sliding window: a start at t counts against the claims in [t, t+Period).
func testLimitRate(t *testing.T, e *env) {
	e.setLimit(store.Limit{Scope: store.LimitQueue, Name: "default", Rate: 3, Period: time.Minute})
	ps := make([]store.InsertParams, 20)
	for i := range ps {
		ps[i] = job("k")
	}
	e.insert(ps...)
	step := func(after time.Duration, max, want int) {
		t.Helper()
		e.advance(after)
		got := e.claim("default", max)
		if len(got) != want {
			t.Fatalf("at +%v: claimed %d, want %d", e.now().Sub(epoch), len(got), want)
		}
		e.done(got...) // whether they still run does not matter to a rate
	}
	step(0, 2, 2)
	step(30*time.Second, 10, 1) // +30s: 2 + 1 = 3 in the window
	step(29*time.Second, 10, 0) // +59s: still 3
	step(time.Second, 10, 2)    // +60s: the 2 of +0s left the window
	step(29*time.Second, 10, 0) // +89s
	step(time.Second, 10, 1)    // +90s: the 1 of +30s left
	step(time.Hour, 10, 3)      // after an idle hour, a full window
}

// Every claim is a start, however the attempt ends and whatever becomes of the job: a retry,
// a snooze that refunds its attempt, a job pruned since.
func testLimitRateStarts(t *testing.T, e *env) {
	e.setLimit(store.Limit{Scope: store.LimitKind, Name: "a", Rate: 4, Period: time.Hour})
	x := e.insertOne(job("a"))
	c := e.claimOne()
	e.completeOK(store.Outcome{ID: x.ID, Fence: c.Fence, State: store.StateRetryable, RunAt: e.now(),
		Error: &store.AttemptError{Error: "boom"}})
	c = e.claimOne()
	e.completeOK(store.Outcome{ID: x.ID, Fence: c.Fence, State: store.StateScheduled, RunAt: e.now(), RefundAttempt: true})
	c = e.claimOne()
	e.done(c)
	e.insertOne(job("a"))
	e.done(e.claimOne())
	e.advance(time.Minute)
	prune := store.PruneParams{States: []store.State{store.StateCompleted}, Before: e.now()}
	if n, err := e.s.Prune(e.ctx, prune); err != nil || n != 2 {
		t.Fatalf("Prune = %d, %v; want the 2 jobs", n, err)
	}
	z := e.insertOne(job("a"))
	other := e.insertOne(job("b"))
	wantClaimed(t, "after 4 starts of 2 jobs", e.claim("default", 10), other)
	e.advance(time.Hour - time.Minute)
	wantClaimed(t, "an hour after the first start", e.claim("default", 10), z)
}

// One limit with both a cap and a rate: the stricter holds.
func testLimitRateAndMax(t *testing.T, e *env) {
	e.setLimit(store.Limit{Scope: store.LimitQueue, Name: "default", MaxRunning: 2, Rate: 3, Period: time.Minute})
	e.insert(job("k"), job("k"), job("k"), job("k"), job("k"))
	first := e.claim("default", 10)
	if len(first) != 2 {
		t.Fatalf("claimed %d under MaxRunning 2, want 2", len(first))
	}
	e.done(first...)
	if got := e.claim("default", 10); len(got) != 1 {
		t.Fatalf("claimed %d with 1 start left in the window, want 1", len(got))
	} else {
		e.done(got...)
	}
	if got := e.claim("default", 10); len(got) != 0 {
		t.Fatalf("claimed %d with the window full", len(got))
	}
	e.advance(time.Minute)
	if got := e.claim("default", 10); len(got) != 2 {
		t.Fatalf("claimed %d in a new window, want the 2 MaxRunning allows", len(got))
	}
}

// A rate taken away, the limit kept, forgets its starts: set again, it begins with an empty
// window.
func testLimitRateSetAgain(t *testing.T, e *env) {
	rated := store.Limit{Scope: store.LimitKind, Name: "k", MaxRunning: 10, Rate: 1, Period: time.Hour}
	e.setLimit(rated)
	e.insert(job("k"), job("k"), job("k"), job("k"))
	if got := e.claim("default", 10); len(got) != 1 {
		t.Fatalf("claimed %d under Rate 1, want 1", len(got))
	}
	e.setLimit(store.Limit{Scope: store.LimitKind, Name: "k", MaxRunning: 10})
	if got := e.claim("default", 10); len(got) != 3 {
		t.Fatalf("claimed %d with the rate taken away, want the 3 left", len(got))
	}
	e.insert(job("k"), job("k"))
	e.setLimit(rated)
	if got := e.claim("default", 10); len(got) != 1 {
		t.Fatalf("claimed %d under the rate set again, want 1", len(got))
	}
}

// LimitUsage reads the limits a claim of a kind in a queue is held to, the queue's first, with
// the jobs running under each and the starts within its window, as the claims count them; it
// leaves out other queues' and kinds' limits and writes nothing.
func testLimitUsage(t *testing.T, e *env) {
	e.setLimit(store.Limit{Scope: store.LimitQueue, Name: "default", MaxRunning: 5, Rate: 4, Period: time.Minute})
	e.setLimit(store.Limit{Scope: store.LimitKind, Name: "a", MaxRunning: 2})
	e.setLimit(store.Limit{Scope: store.LimitKind, Name: "b", Rate: 1, Period: time.Hour})
	e.setLimit(store.Limit{Scope: store.LimitQueue, Name: "other", MaxRunning: 1})
	e.insert(job("a"), job("a"), job("k"))
	got := e.claim("default", 10) // a, a, k: 3 starts
	e.done(got[2])
	usage := func(queue, kind string) []store.LimitUsage {
		t.Helper()
		u, err := e.s.LimitUsage(e.ctx, queue, kind)
		if err != nil {
			t.Fatalf("LimitUsage(%q, %q): %v", queue, kind, err)
		}
		return u
	}
	want := func(what string, got []store.LimitUsage, want ...store.LimitUsage) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: %+v, want %+v", what, got, want)
		}
	}
	queue := store.LimitUsage{Limit: store.Limit{Scope: store.LimitQueue, Name: "default", MaxRunning: 5, Rate: 4, Period: time.Minute},
		Running: 2, Started: 3}
	kindA := store.LimitUsage{Limit: store.Limit{Scope: store.LimitKind, Name: "a", MaxRunning: 2}, Running: 2}
	want("kind a in the default queue", usage("default", "a"), queue, kindA)
	if kindA.Allowance() != 0 || queue.Allowance() != 1 {
		t.Errorf("allowances %d and %d, want 0 (a runs 2 of 2) and 1 (3 of 4 starts)", kindA.Allowance(), queue.Allowance())
	}
	want("kind k in the default queue", usage("default", "k"), queue)
	want("a kind and queue without limits", usage("none", "k"))
	e.advance(time.Minute)
	queue.Started = 0
	want("a minute later", usage("default", "a"), queue, kindA)
	// The limits hold as before the reads.
	e.done(got[:2]...)
	bs := e.insert(job("b"), job("b"))
	wantClaimed(t, "b, under its rate of one", e.claim("default", 10), bs[0])
}
