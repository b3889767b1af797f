package rota_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

// claimingStore is a store beside which a node claims batch callbacks after every Cancel call:
// whatever CancelWorkflow releases between two of its calls, a node may start.
type claimingStore struct {
	store.Store
	claimed []*store.JobRow
}

func (s *claimingStore) Cancel(ctx context.Context, id int64) (*store.JobRow, error) {
	row, err := s.Store.Cancel(ctx, id)
	got, cerr := s.Store.Claim(ctx, store.ClaimParams{Queue: rota.QueueDefault, Kinds: []string{batchDone{}.Kind()},
		Max: 10, Owner: "node", LeaseFor: time.Minute})
	if cerr != nil {
		return nil, cerr
	}
	s.claimed = append(s.claimed, got...)
	return row, err
}

// Cancelling a batch never runs its callback: a job added to the batch (AddToBatch) has a
// greater id than the callback, so cancelling "latest first" ends it before the callback, and
// the callback, which ignores failed dependencies, is released when it was the last it waited for.
func TestCancelWorkflowDoesNotReleaseBatchCallback(t *testing.T) {
	ctx := t.Context()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "rota.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cs := &claimingStore{Store: st}
	c := rota.NewClient(cs, nil)
	res, err := c.InsertBatch(ctx, rota.NewBatch(batchDone{}, nil).Add(batchJob{N: 1}, nil))
	if err != nil {
		t.Fatal(err)
	}
	// A job is added to the batch; then the batch's own job runs, and the added one still waits
	// to run.
	if _, err := c.AddToBatch(ctx, res.Callback.ID, rota.InsertManyParams{Args: batchJob{N: 2}}); err != nil {
		t.Fatal(err)
	}
	first, err := st.Claim(ctx, store.ClaimParams{Queue: rota.QueueDefault, Kinds: []string{batchJob{}.Kind()},
		Max: 1, Owner: "node", LeaseFor: time.Minute})
	if err != nil || len(first) != 1 {
		t.Fatal(first, err)
	}
	if _, err := st.Complete(ctx, []store.Outcome{{ID: first[0].ID, Fence: first[0].Fence, State: store.StateCompleted}}); err != nil {
		t.Fatal(err)
	}

	if _, err := c.CancelWorkflow(ctx, res.ID); err != nil {
		t.Fatal(err)
	}
	if len(cs.claimed) > 0 {
		t.Errorf("the callback (job %d) was released and claimed while CancelWorkflow ran: its handler runs", cs.claimed[0].ID)
	}
	if cb := mustGet(t, c, res.Callback.ID); cb.State != rota.StateCancelled {
		t.Errorf("callback is %s after CancelWorkflow, want cancelled", cb.State)
	}
}

// joinsOnCancel is a store whose first Cancel runs join first: a producer adding to a batch
// between CancelWorkflow's listing of the steps and its cancel of the callback.
type joinsOnCancel struct {
	*sqlite.Store
	join func()
}

func (s *joinsOnCancel) Cancel(ctx context.Context, id int64) (*store.JobRow, error) {
	if s.join != nil {
		join := s.join
		s.join = nil
		join()
	}
	return s.Store.Cancel(ctx, id)
}

// A job added to a batch while CancelWorkflow cancels it is cancelled too: once the callback
// is, no job can join, and the steps are listed again until none is left running.
func TestCancelWorkflowTakesAJobAddedMeanwhile(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "rota.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	js := &joinsOnCancel{Store: st}
	c := rota.NewClient(js, nil)
	b, err := c.InsertBatch(t.Context(), rota.NewBatch(batchDone{}, nil).Add(batchJob{N: 1}, nil))
	if err != nil {
		t.Fatal(err)
	}
	var added []rota.InsertResult
	js.join = func() {
		if added, err = c.AddToBatch(t.Context(), b.Callback.ID, rota.InsertManyParams{Args: batchJob{N: 2}}); err != nil {
			t.Errorf("add to the batch: %v", err)
		}
	}
	if _, err := c.CancelWorkflow(t.Context(), b.ID); err != nil {
		t.Fatal(err)
	}
	if len(added) != 1 {
		t.Fatalf("added %d jobs, want 1", len(added))
	}
	if row := mustGet(t, c, added[0].Job.ID); row.State != rota.StateCancelled {
		t.Errorf("the job added while the batch was cancelled is %s, want cancelled", row.State)
	}
}
