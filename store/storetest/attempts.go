package storetest

import (
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

// attemptTests check what a job keeps of who ran each attempt and for how long: AttemptedBy for
// the latest claim, Node and Duration in each failed attempt's error.
var attemptTests = map[string]func(*testing.T, *env){
	"AttemptedByOutlivesAttempt":   testAttemptedBy,
	"ErrorRecordsNodeAndDuration":  testErrorNodeDuration,
	"RescueRecordsNodeAndDuration": testRescueNodeDuration,
	"NoAttemptNoNode":              testNoAttemptNoNode,
}

// An odd duration, to the microsecond, so that a store rounding or truncating it shows.
const ranFor = 1500*time.Millisecond + 7*time.Microsecond

// AttemptedBy is the latest claim's owner: set by the claim, kept once the attempt ended (unlike
// Owner), replaced by the next claim.
func testAttemptedBy(t *testing.T, e *env) {
	id := e.insertOne(job("k")).ID
	c := e.claimAs("node-a", time.Minute, 1)[0]
	if c.AttemptedBy != "node-a" || e.get(id).AttemptedBy != "node-a" {
		t.Fatalf("AttemptedBy after claim = %q (claim) %q (get), want node-a", c.AttemptedBy, e.get(id).AttemptedBy)
	}
	got := e.completeOK(store.Outcome{ID: id, Fence: c.Fence, State: store.StateRetryable,
		Error: &store.AttemptError{Error: "boom"}})
	if got.AttemptedBy != "node-a" || got.Owner != "" {
		t.Fatalf("after the attempt AttemptedBy = %q, Owner = %q; want node-a and none", got.AttemptedBy, got.Owner)
	}
	c = e.claimAs("node-b", time.Minute, 1)[0]
	got = e.completeOK(store.Outcome{ID: id, Fence: c.Fence, State: store.StateCompleted})
	if got.AttemptedBy != "node-b" {
		t.Fatalf("AttemptedBy after the second attempt = %q, want node-b", got.AttemptedBy)
	}
	if got = e.retry(id); got.AttemptedBy != "node-b" {
		t.Fatalf("AttemptedBy after Retry = %q, want node-b until the next claim", got.AttemptedBy)
	}
}

// An outcome's error names the claim's owner and how long the attempt ran by the store's clock,
// whatever the caller said, on every path an outcome takes (retried, final, several in a call).
func testErrorNodeDuration(t *testing.T, e *env) {
	unique := job("k")
	unique.UniqueKey = "u"
	e.insert(job("k"), job("k"), unique)
	claimed := e.claimAs("node-a", time.Hour, 3)
	e.advance(ranFor)
	lie := func() *store.AttemptError {
		return &store.AttemptError{Error: "boom", Node: "liar", Duration: time.Hour}
	}
	ends := []store.State{store.StateRetryable, store.StateDiscarded, store.StateDiscarded}
	var outcomes []store.Outcome
	for i, c := range claimed {
		outcomes = append(outcomes, store.Outcome{ID: c.ID, Fence: c.Fence, State: ends[i], Error: lie()})
	}
	for i, ok := range e.complete(outcomes...) {
		if !ok {
			t.Fatalf("outcome %d not applied", i)
		}
	}
	for _, c := range claimed {
		wantAttemptErrors(t, e.get(c.ID), attemptRan{"node-a", ranFor})
	}
	first := claimed[0].ID
	c := e.claimAs("node-b", time.Hour, 1)[0]
	if c.ID != first {
		t.Fatalf("claimed %d, want the retryable job %d", c.ID, first)
	}
	e.advance(2 * time.Second)
	e.completeOK(store.Outcome{ID: first, Fence: c.Fence, State: store.StateDiscarded, Error: lie()})
	wantAttemptErrors(t, e.get(first), attemptRan{"node-a", ranFor}, attemptRan{"node-b", 2 * time.Second})
}

// A rescue's error names the dead owner and the time from its claim to the rescue.
func testRescueNodeDuration(t *testing.T, e *env) {
	id := e.insertOne(job("k")).ID
	e.claimAs("dead", time.Second, 1)
	e.advance(time.Minute + ranFor)
	if got := e.rescue(10); len(got) != 1 {
		t.Fatalf("rescued %d, want 1", len(got))
	}
	got := e.get(id)
	wantAttemptErrors(t, got, attemptRan{"dead", time.Minute + ranFor})
	if got.AttemptedBy != "dead" {
		t.Fatalf("AttemptedBy after rescue = %q, want dead", got.AttemptedBy)
	}
}

// An error that ends no attempt (a dependent cancelled because its dependency failed) has no node
// and no duration.
func testNoAttemptNoNode(t *testing.T, e *env) {
	dep := job("k")
	dep.MaxAttempts = 1
	d := e.insertOne(dep)
	w := e.insertOne(after(d.ID))
	c := e.claimAs("node-a", time.Hour, 1)[0]
	e.completeOK(store.Outcome{ID: c.ID, Fence: c.Fence, State: store.StateDiscarded,
		Error: &store.AttemptError{Error: "boom"}})
	got := e.get(w.ID)
	if got.State != store.StateCancelled || len(got.Errors) != 1 {
		t.Fatalf("dependent %s with errors %+v, want cancelled with one", got.State, got.Errors)
	}
	if er := got.Errors[0]; er.Node != "" || er.Duration != 0 {
		t.Fatalf("dependency error has Node %q, Duration %v; want neither", er.Node, er.Duration)
	}
	if got.AttemptedBy != "" {
		t.Fatalf("never claimed job has AttemptedBy %q", got.AttemptedBy)
	}
}

// attemptRan is what an attempt's error should say of where and how long it ran.
type attemptRan struct {
	node string
	d    time.Duration
}

func wantAttemptErrors(t *testing.T, j *store.JobRow, want ...attemptRan) {
	t.Helper()
	if len(j.Errors) != len(want) {
		t.Fatalf("job %d has errors %+v, want %d", j.ID, j.Errors, len(want))
	}
	for i, w := range want {
		if g := j.Errors[i]; g.Attempt != i+1 || g.Node != w.node || g.Duration != w.d {
			t.Errorf("job %d Errors[%d] = attempt %d on %q for %v, want attempt %d on %q for %v",
				j.ID, i, g.Attempt, g.Node, g.Duration, i+1, w.node, w.d)
		}
	}
}
