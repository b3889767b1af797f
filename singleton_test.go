package rota

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

// TestSingletonWorkerRunsOnOneNodeAndHandsOver runs two nodes whose worker requires the same
// singleton lease: only the holder claims; when it stops, the other takes over. Real clock, short
// leases, events to wait on.
func TestSingletonWorkerRunsOnOneNodeAndHandsOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rota.db")
	var ranOn [2]atomic.Int64
	// The hand-over is the first node's release at its stop, taken within one try: a long TTL
	// costs nothing, and keeps a loaded machine's slow renewals from passing the lease on mid-run.
	leases := LeaderConfig{TTL: 10 * time.Second, RenewEvery: 200 * time.Millisecond, TryEvery: 100 * time.Millisecond}
	start := func(i int, id string) (*Node, <-chan Event) {
		st, err := sqlite.Open(context.Background(), path, sqlite.WithLogger(testLogger(t)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		ws := NewWorkers()
		AddWorker(ws, WorkFunc[testArgs](func(ctx context.Context, j *Job[testArgs]) error {
			ranOn[i].Add(1)
			return nil
		}), &WorkerOptions{Singleton: "ledger-export"})
		n, err := NewNode(Config{Store: st, Workers: ws, ID: id, Logger: testLogger(t), Leader: leases})
		if err != nil {
			t.Fatal(err)
		}
		events, unsubscribe := n.Subscribe(1000)
		t.Cleanup(unsubscribe)
		if err := n.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Stop(context.Background()) })
		return n, events
	}
	first, firstEvents := start(0, "first")
	waitEvent(t, firstEvents, EventSingletonAcquired)
	_, secondEvents := start(1, "second")

	client := first.Client()
	for i := range 20 {
		if _, err := client.Insert(context.Background(), testArgs{N: i}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		waitEvent(t, firstEvents, EventJobCompleted)
	}
	if ranOn[1].Load() != 0 {
		t.Fatalf("the node without the singleton lease ran %d jobs", ranOn[1].Load())
	}

	if err := first.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, secondEvents, EventSingletonAcquired)
	if !strings.HasPrefix(ev.Reason, "ledger-export") {
		t.Fatalf("acquired event reason %q", ev.Reason)
	}
	if _, err := NewClient(first.cfg.Store, nil).Insert(context.Background(), testArgs{N: 99}, nil); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, secondEvents, EventJobCompleted)
	if ranOn[0].Load() != 20 || ranOn[1].Load() != 1 {
		t.Fatalf("runs: first %d, second %d; want 20 and 1", ranOn[0].Load(), ranOn[1].Load())
	}
}

// waitEvent waits for the next event of type typ, failing the test after a generous real-time
// bound (a safety net against a hang, not a sleep: the event normally arrives in microseconds).
func waitEvent(t *testing.T, events <-chan Event, typ EventType) Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Type == typ {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s event within 10s", typ)
		}
	}
}

// leaseOutage is a store whose singleton leases cannot be renewed once out is set, as when the
// node is cut off from the store's lease rows.
type leaseOutage struct {
	*sqlite.Store
	out atomic.Bool
}

func (l *leaseOutage) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (store.Lease, bool, error) {
	if l.out.Load() && strings.HasPrefix(name, singletonLeasePrefix) {
		return store.Lease{}, false, errors.New("lease rows unreachable")
	}
	return l.Store.AcquireLease(ctx, name, owner, ttl)
}

// startSingletonNode starts a node on st whose one worker, work, is gated by the singleton
// lease "ledger-export" with short leases, and returns it and its events once it holds the lease.
func startSingletonNode(t *testing.T, st store.Store, work func(context.Context, *Job[testArgs]) error) (*Node, <-chan Event) {
	t.Helper()
	ws := NewWorkers()
	AddWorker(ws, WorkFunc[testArgs](work), &WorkerOptions{Singleton: "ledger-export"})
	leases := LeaderConfig{TTL: 900 * time.Millisecond, RenewEvery: 200 * time.Millisecond, TryEvery: 100 * time.Millisecond}
	n, err := NewNode(Config{Store: st, Workers: ws, ID: "holder", Logger: testLogger(t), Leader: leases})
	if err != nil {
		t.Fatal(err)
	}
	events, unsubscribe := n.Subscribe(100)
	t.Cleanup(unsubscribe)
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop(context.Background()) })
	waitEvent(t, events, EventSingletonAcquired)
	return n, events
}

// A node that loses its singleton lease hands the kind's running jobs back, before the lease
// can pass to another node: their contexts are cancelled and the jobs wait in their queue,
// their attempt refunded.
func TestLosingTheSingletonHandsItsJobsBack(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "rota.db"), sqlite.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	outage := &leaseOutage{Store: st}
	started, cause := make(chan struct{}), make(chan error, 1)
	n, events := startSingletonNode(t, outage, func(ctx context.Context, j *Job[testArgs]) error {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return ctx.Err()
	})
	res, err := n.Client().Insert(context.Background(), testArgs{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	recv(t, started)
	outage.out.Store(true)
	waitEvent(t, events, EventSingletonLost)
	if got := recv(t, cause); !errors.Is(got, errSingletonLost) {
		t.Fatalf("the handler's context ended with %v", got)
	}
	waitEvent(t, events, EventJobHandedBack)
	row, err := st.Get(context.Background(), res.Job.ID)
	if err != nil || row.State != StateAvailable || row.Attempt != 0 {
		t.Fatalf("after the loss: %+v, %v; want available with its attempt refunded", row, err)
	}
}
