package rota

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/internal/maintenance"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

// testArgs is the args type most runtime tests use; Mode tells the test worker what to do.
type testArgs struct {
	N int `json:"n"`
}

func (testArgs) Kind() string { return "test" }

// bundle is what a runtime test needs: a real SQLite store, a fake clock, a node and its events.
type bundle struct {
	store  *sqlite.Store
	clock  *clockwork.FakeClock
	node   *Node
	client *Client
	events <-chan Event
}

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func openStore(t *testing.T, clock clockwork.Clock) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "rota.db"), sqlite.WithClock(clock), sqlite.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// testLogger writes to the test's output, shown only for failed tests or with -v.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// setup starts a node whose only worker is work, on one queue with maxWorkers slots.
func setup(t *testing.T, work func(context.Context, *Job[testArgs]) error, configure func(*Config)) *bundle {
	t.Helper()
	return setupWith(t, work, configure, nil)
}

// setupWith is setup that lets before (if not nil) see the node before it starts, as a test
// registering a Node.Handle handler needs.
func setupWith(t *testing.T, work func(context.Context, *Job[testArgs]) error, configure func(*Config), before func(*Node)) *bundle {
	t.Helper()
	clock := clockwork.NewFakeClockAt(epoch)
	st := openStore(t, clock)
	workers := NewWorkers()
	AddWorker(workers, WorkFunc[testArgs](work), &WorkerOptions{Timeout: 7 * time.Second})
	cfg := Config{Store: st, Workers: workers, Clock: clock, ID: "node-a", TimeoutGrace: 5 * time.Second, Logger: testLogger(t),
		// Elections have their own tests; here the node leads at once, so big jumps of the fake
		// clock cannot make it step down between two renewals it never got to send.
		Leader: LeaderConfig{Standalone: true}}
	if configure != nil {
		configure(&cfg)
	}
	b := startBundle(t, st, clock, cfg, before)
	b.timers(t, baseTimers(b.node)) // every loop of the node is armed
	return b
}

// startBundle makes a node of cfg, lets before (if not nil) see it before it starts, starts it
// and stops it when the test ends.
func startBundle(t *testing.T, st *sqlite.Store, clock *clockwork.FakeClock, cfg Config, before func(*Node)) *bundle {
	t.Helper()
	node, err := NewNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(node)
	}
	events, unsubscribe := node.Subscribe(100)
	t.Cleanup(unsubscribe)
	if err := node.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = node.Stop(ctx)
	})
	return &bundle{store: st, clock: clock, node: node, client: node.Client(), events: events}
}

func (b *bundle) insert(t *testing.T, args Args, opts *InsertOpts) *JobRow {
	t.Helper()
	res, err := b.client.Insert(context.Background(), args, opts)
	if err != nil {
		t.Fatalf("insert: %v", err)
	}
	return res.Job
}

// event waits for the next event of type typ (see waitEvent).
func (b *bundle) event(t *testing.T, typ EventType) Event {
	t.Helper()
	return waitEvent(t, b.events, typ)
}

func (b *bundle) get(t *testing.T, id int64) *JobRow {
	t.Helper()
	row, err := b.store.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("get %d: %v", id, err)
	}
	return row
}

// timers blocks until the fake clock has n timers and tickers waiting, so an Advance reaches the
// one the test is about.
func (b *bundle) timers(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.clock.BlockUntilContext(ctx, n); err != nil {
		t.Fatalf("waiting for %d clock waiters: %v", n, err)
	}
}

// baseTimers is how many timers and tickers an idle node holds on its clock: one poll per queue,
// the heartbeat, the rescuer, the elector's tick and the node registry's; on a leader (every
// standalone node) also the pruner, the cron planner, the tidier where the store has one, and the
// elector's renew deadline where the store has leases.
func baseTimers(n *Node) int {
	count := len(n.queues) + 1 + 1 + 1
	if _, ok := n.cfg.Store.(store.NodeRegistry); ok {
		count++
	}
	if _, ok := n.cfg.Store.(store.StatsKeeper); ok {
		count++ // the ticker that adds the node's counts to the store
	}
	if !n.cfg.Leader.Standalone {
		return count // the tests that elect leave the leader to another node
	}
	if _, ok := n.cfg.Store.(store.Tidier); ok {
		count++ // the tidier's ticker
	}
	return count + 2
}

var _ store.Store = (*sqlite.Store)(nil)

// recv receives from ch, failing the test after a generous bound instead of hanging the suite.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing received within 10s")
		var zero T
		return zero
	}
}

// untilCancelled is a worker that closes started once the first of its jobs runs, then works
// until its context is cancelled, as a long job that checks its context does. A later job may
// start too: one that takes the slot the first freed while a stop's cancel reaches it.
func untilCancelled(started chan struct{}) func(context.Context, *Job[testArgs]) error {
	var once sync.Once
	return func(ctx context.Context, j *Job[testArgs]) error {
		once.Do(func() { close(started) })
		<-ctx.Done()
		return ctx.Err()
	}
}

// service is the node's maintenance service of that name, for a test to run one pass of it now.
func (n *Node) service(t *testing.T, name string) maintenance.Service {
	t.Helper()
	for _, s := range append(n.nodeServices(), n.leaderServices()...) {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no service %q", name)
	return maintenance.Service{}
}
