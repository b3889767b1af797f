package rota

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/jonboulle/clockwork"
)

// setupAhead makes a node with one slot whose first claim may take a job beyond it, as one that
// saw a slot freed while its last claim travelled, inserts two jobs and starts it: the first
// claim takes both, one runs, the other waits for the slot.
func setupAhead(t *testing.T, work func(context.Context, *Job[testArgs]) error) (*bundle, []*JobRow) {
	t.Helper()
	clock := clockwork.NewFakeClockAt(epoch)
	st := openStore(t, clock)
	workers := NewWorkers()
	AddWorker(workers, WorkFunc[testArgs](work), nil)
	cfg := Config{Store: st, Workers: workers, Clock: clock, ID: "node-a", Logger: testLogger(t),
		Queues: map[string]QueueConfig{QueueDefault: {MaxWorkers: 1}}, Leader: LeaderConfig{Standalone: true}}
	var jobs []*JobRow
	b := startBundle(t, st, clock, cfg, func(node *Node) {
		node.queues[0].ahead.Store(1)
		res, err := node.Client().InsertMany(context.Background(), []InsertManyParams{{Args: testArgs{}}, {Args: testArgs{}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			jobs = append(jobs, r.Job)
		}
	})
	return b, jobs
}

// Jobs claimed beyond the free slots wait for one: never more handlers at once than the queue's
// MaxWorkers, and every job runs.
func TestJobsClaimedAheadWaitForASlot(t *testing.T) {
	var running, most atomic.Int64
	started, proceed := make(chan struct{}, 2), make(chan struct{})
	b, jobs := setupAhead(t, func(ctx context.Context, j *Job[testArgs]) error {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		started <- struct{}{}
		<-proceed
		running.Add(-1)
		return nil
	})
	recv(t, started)
	for _, j := range jobs { // one claim took both
		if row := b.get(t, j.ID); row.State != StateRunning {
			t.Fatalf("job %d is %s while the first runs, want both claimed", j.ID, row.State)
		}
	}
	proceed <- struct{}{}
	for range jobs[1:] {
		recv(t, started)
		proceed <- struct{}{}
	}
	for range jobs {
		b.event(t, EventJobCompleted)
	}
	if got := most.Load(); got != 1 {
		t.Fatalf("%d handlers ran at once on a queue of one slot", got)
	}
	for _, j := range jobs {
		if row := b.get(t, j.ID); row.State != StateCompleted || row.Attempt != 1 {
			t.Errorf("job %d: %s after %d attempts", j.ID, row.State, row.Attempt)
		}
	}
}

// A stop hands the jobs waiting for a slot back with the running one, attempts refunded.
func TestStopHandsBackJobsClaimedAhead(t *testing.T) {
	started := make(chan struct{})
	b, jobs := setupAhead(t, untilCancelled(started))
	recv(t, started)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no time to drain
	if err := b.node.Stop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("stop: %v, want the drain deadline reported", err)
	}
	for _, j := range jobs {
		if row := b.get(t, j.ID); row.State != StateAvailable || row.Attempt != 0 || len(row.Errors) != 0 {
			t.Errorf("job %d handed back as %s, attempt %d, errors %v", j.ID, row.State, row.Attempt, row.Errors)
		}
	}
}

// A job cancelled while it waits for a slot ends cancelled, and its handler never runs.
func TestCancelJobClaimedAhead(t *testing.T) {
	var handled atomic.Int64
	started, proceed := make(chan int64, 2), make(chan struct{})
	b, jobs := setupAhead(t, func(ctx context.Context, j *Job[testArgs]) error {
		handled.Add(1)
		started <- j.ID
		select {
		case <-proceed:
		case <-ctx.Done():
		}
		return nil
	})
	waiting := jobs[1]
	if recv(t, started) == waiting.ID { // the claim of both is back; which one took the slot is the runners' race
		waiting = jobs[0]
	}
	// The claim's second job may reach the node's running set after the first handler started:
	// cancelled before that, there would be nothing to cancel yet.
	for range jobs {
		b.event(t, EventJobStarted)
	}
	b.node.cancelLocal(waiting.ID)
	if e := b.event(t, EventJobCancelled); e.Job.ID != waiting.ID {
		t.Fatalf("cancelled job %d, want %d", e.Job.ID, waiting.ID)
	}
	close(proceed)
	b.event(t, EventJobCompleted)
	if n := handled.Load(); n != 1 {
		t.Fatalf("%d handlers ran, want only the job not cancelled", n)
	}
	if row := b.get(t, waiting.ID); row.State != StateCancelled {
		t.Fatalf("cancelled waiting job is %s", row.State)
	}
}
