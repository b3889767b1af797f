package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

var notifyTests = map[string]func(*testing.T, *env){
	"Insert":        testNotifyInsert,
	"Final":         testNotifyFinal,
	"Unsubscribe":   testNotifyUnsubscribe,
	"RunnableAgain": testNotifyRunnableAgain,
	"Resume":        testNotifyResume,
}

// patience bounds a wait for a notification that should come at once. It is a real-time
// safeguard against a hung test, not a timing assumption.
const patience = 10 * time.Second

func (e *env) subscribe(ctx context.Context) <-chan store.Notification {
	e.t.Helper()
	n, ok := e.s.(store.Notifier)
	if !ok {
		e.t.Skip("store does not implement store.Notifier")
	}
	ch, err := n.Subscribe(ctx)
	if err != nil {
		e.t.Fatalf("Subscribe: %v", err)
	}
	return ch
}

// await reads notifications until one matches, skipping others: delivery may coalesce and other
// events may come first.
func await(t *testing.T, ch <-chan store.Notification, match func(store.Notification) bool) {
	t.Helper()
	timeout := time.After(patience)
	for {
		select {
		case n, ok := <-ch:
			if !ok {
				t.Fatal("notification channel closed")
			}
			if match(n) {
				return
			}
		case <-timeout:
			t.Fatal("no matching notification")
		}
	}
}

func testNotifyInsert(t *testing.T, e *env) {
	ch := e.subscribe(e.ctx)
	e.insertOne(inQueue("q1"))
	await(t, ch, func(n store.Notification) bool { return n.Topic == store.TopicInsert && n.Queue == "q1" })
}

func testNotifyFinal(t *testing.T, e *env) {
	ch := e.subscribe(e.ctx)
	j := e.insertOne(job("k"))
	c := e.claimOne()
	e.completeOK(store.Outcome{ID: j.ID, Fence: c.Fence, State: store.StateCompleted})
	await(t, ch, func(n store.Notification) bool { return n.Topic == store.TopicFinal && n.JobID == j.ID })

	other := e.insertOne(job("k"))
	e.cancel(other.ID)
	await(t, ch, func(n store.Notification) bool { return n.Topic == store.TopicFinal && n.JobID == other.ID })
}

// A job made claimable at once other than by an insert wakes the queue's idle nodes as an insert
// does: rescued to run again now, or handed back.
func testNotifyRunnableAgain(t *testing.T, e *env) {
	ch := e.subscribe(e.ctx)
	inQ := func(n store.Notification) bool {
		return n.Topic == store.TopicInsert && (n.Queue == "q" || n.Queue == "")
	}
	e.insert(inQueue("q"), inQueue("q"))
	await(t, ch, inQ)
	claim := func() *store.JobRow {
		t.Helper()
		got := e.claimParams(store.ClaimParams{Queue: "q", Kinds: kinds, Max: 1, Owner: "gone", LeaseFor: time.Second})
		if len(got) != 1 {
			t.Fatalf("claimed %d jobs of q, want 1", len(got))
		}
		return got[0]
	}
	a := claim()
	e.advance(time.Minute)
	if rescued := e.rescue(10); len(rescued) != 1 || rescued[0].ID != a.ID || rescued[0].State != store.StateRetryable {
		t.Fatalf("rescued %+v, want job %d retryable", rescued, a.ID)
	}
	await(t, ch, inQ)
	b := claim()
	e.completeOK(store.Outcome{ID: b.ID, Fence: b.Fence, State: store.StateAvailable, RefundAttempt: true})
	await(t, ch, inQ)
}

// Resuming a paused queue wakes its idle nodes as an insert does: its jobs can run now.
func testNotifyResume(t *testing.T, e *env) {
	ch := e.subscribe(e.ctx)
	inQ := func(n store.Notification) bool {
		return n.Topic == store.TopicInsert && (n.Queue == "q" || n.Queue == "")
	}
	if err := e.s.PauseQueue(e.ctx, "q"); err != nil {
		t.Fatal(err)
	}
	e.insertOne(inQueue("q"))
	await(t, ch, inQ)
	if err := e.s.ResumeQueue(e.ctx, "q"); err != nil {
		t.Fatal(err)
	}
	await(t, ch, inQ)
}

// A subscription ends, and its channel closes, when its context ends.
func testNotifyUnsubscribe(t *testing.T, e *env) {
	ctx, cancel := context.WithCancel(e.ctx)
	ch := e.subscribe(ctx)
	cancel()
	timeout := time.After(patience)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("channel still open after its context ended")
		}
	}
}
