package rota

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotahq/rota/store/sqlite"
)

// heartbeatOutage is a store whose heartbeats fail while out is set, as when the node is cut
// off from the store for longer than a job's lease.
type heartbeatOutage struct {
	*sqlite.Store
	out atomic.Bool
}

func (h *heartbeatOutage) Heartbeat(ctx context.Context, owner string, leaseFor time.Duration) ([]int64, error) {
	if h.out.Load() {
		return nil, errors.New("store unreachable")
	}
	return h.Store.Heartbeat(ctx, owner, leaseFor)
}

// lostArgs is a kind without a timeout: its first attempt runs until its context ends.
type lostArgs struct{}

func (lostArgs) Kind() string { return "lost-lease" }

// An attempt whose lease ran out, and whose job was rescued and then claimed again by the same
// node, still runs there. The new attempt ends it, with a cause that says why, so that it does
// not run beside the new one unseen: nothing but the new attempt's start can still reach it
// (the running set holds one attempt per job), and a stop would otherwise wait for it forever.
func TestAClaimAgainEndsTheAttemptThatLostItsLease(t *testing.T) {
	release := make(chan struct{})
	defer close(release) // lets the first attempt go if it was never cancelled
	first, second := make(chan struct{}, 1), make(chan struct{}, 1)
	firstCause := make(chan error, 1)
	var outage *heartbeatOutage
	b := setup(t, func(context.Context, *Job[testArgs]) error { return nil }, func(c *Config) {
		outage = &heartbeatOutage{Store: c.Store.(*sqlite.Store)}
		c.Store = outage
		AddWorker(c.Workers, WorkFunc[lostArgs](func(ctx context.Context, j *Job[lostArgs]) error {
			if j.Attempt > 1 {
				second <- struct{}{}
				return nil
			}
			first <- struct{}{}
			select {
			case <-ctx.Done():
				firstCause <- context.Cause(ctx)
			case <-release:
			}
			return ctx.Err()
		}), &WorkerOptions{Timeout: -1})
	})
	job := b.insert(t, lostArgs{}, nil)
	recv(t, first)
	outage.out.Store(true) // the lease runs out
	b.clock.Advance(JobLeaseDefault + RescueIntervalDefault)
	if ev := b.event(t, EventJobRescued); ev.Job.ID != job.ID {
		t.Fatalf("rescued job %d, want %d", ev.Job.ID, job.ID)
	}
	outage.out.Store(false)
	b.clock.Advance(FetchPollIntervalDefault) // this node claims the job again
	recv(t, second)
	if got := recv(t, firstCause); !errors.Is(got, errLeaseLost) {
		t.Fatalf("the first attempt's context ended with %v, want %v", got, errLeaseLost)
	}
	b.event(t, EventJobCompleted)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no time to drain: nothing is left to drain
	if err := b.node.Stop(ctx); err != nil {
		t.Fatalf("Stop = %v, want nil: no attempt is left running", err)
	}
}
