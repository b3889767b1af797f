package rota

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
)

// Retention is judged by the store's clock, which stamped the jobs' finalized times: a node
// whose own clock lags a day behind still prunes a job completed 25 hours ago by the store's.
func TestPrunerJudgesAgesByTheStoresClock(t *testing.T) {
	ctx := context.Background()
	storeClock, nodeClock := clockwork.NewFakeClockAt(epoch), clockwork.NewFakeClockAt(epoch)
	st := openStore(t, storeClock)
	if _, err := st.Insert(ctx, []store.InsertParams{{Kind: "test", Queue: QueueDefault, Args: []byte(`{}`), MaxAttempts: 1}}); err != nil {
		t.Fatal(err)
	}
	jobs, err := st.Claim(ctx, store.ClaimParams{Queue: QueueDefault, Kinds: []string{"test"}, Max: 1, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v, %v", jobs, err)
	}
	if _, err := st.Complete(ctx, []store.Outcome{{ID: jobs[0].ID, Fence: jobs[0].Fence, State: store.StateCompleted}}); err != nil {
		t.Fatal(err)
	}
	workers := NewWorkers()
	AddWorker(workers, WorkFunc[testArgs](func(context.Context, *Job[testArgs]) error { return nil }), nil)
	n, err := NewNode(Config{Store: st, Workers: workers, Clock: nodeClock, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	storeClock.Advance(25 * time.Hour) // completed jobs are kept 24 h by default
	if deleted, err := n.pruner().Pass(ctx); err != nil || deleted != 1 {
		t.Fatalf("pruned %d (%v), want the job completed 25 h ago by the store's clock", deleted, err)
	}
}
