package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

var notifyTests = map[string]func(*testing.T, *env){
	"Insert":      testNotifyInsert,
	"Final":       testNotifyFinal,
	"Unsubscribe": testNotifyUnsubscribe,
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
