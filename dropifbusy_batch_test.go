package rota

import (
	"context"
	"errors"
	"testing"

	"github.com/jonboulle/clockwork"
)

// DropIfBusy keeps a best-effort job out of a queue that already has that many jobs waiting, and
// the call fails with ErrBusy: in a batch and a workflow too, which take the same InsertOpts.
func TestDropIfBusyHoldsForBatchesAndWorkflows(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, clockwork.NewFakeClockAt(epoch))
	c := NewClient(st, &ClientConfig{Clock: clockwork.NewFakeClockAt(epoch)})
	for range 3 {
		if _, err := c.Insert(ctx, testArgs{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	busy := &InsertOpts{DropIfBusy: 1}
	if _, err := c.Insert(ctx, testArgs{N: 1}, busy); !errors.Is(err, ErrBusy) {
		t.Fatalf("Insert into a busy queue: %v, want ErrBusy", err)
	}
	_, err := c.InsertBatch(ctx, NewBatch(testArgs{N: 9}, nil).Add(testArgs{N: 2}, busy))
	if !errors.Is(err, ErrBusy) {
		t.Errorf("InsertBatch with a DropIfBusy job into a queue with 3 waiting: err %v, want ErrBusy", err)
	}
	wf := NewWorkflow()
	wf.Add("a", testArgs{N: 3}, busy)
	_, err = c.InsertWorkflow(ctx, wf)
	if !errors.Is(err, ErrBusy) {
		t.Errorf("InsertWorkflow with a DropIfBusy step into a queue with 3+ waiting: err %v, want ErrBusy", err)
	}
}
