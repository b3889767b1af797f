package rota

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rotahq/rota/store"
)

// A job delayed far into the future never runs now: a RunAt or ExpiresAt past what every store
// keeps (a Unix microsecond count past the year 294246 wraps around) is refused.
func TestFarFutureRunAtDoesNotRunNow(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(epoch)
	st := openStore(t, clock)
	c := NewClient(st, &ClientConfig{Clock: clock})
	far := time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC)
	res, err := c.Insert(ctx, testArgs{}, &InsertOpts{RunAt: far})
	if err != nil {
		return // refused as given: fine
	}
	rows, err := st.Claim(ctx, store.ClaimParams{Queue: QueueDefault, Kinds: []string{"test"}, Max: 10, Owner: "n", LeaseFor: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	row, _ := st.Get(ctx, res.Job.ID)
	if len(rows) > 0 {
		t.Fatalf("job delayed to %v was inserted (state %s, insert said run_at %v, stored run_at %v) and claimed at once", far, res.Job.State, res.Job.RunAt, row.RunAt)
	}
}
