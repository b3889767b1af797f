package redis

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
)

// A Cancel that reaches the store between Rescue's two scripts (the first reads the
// candidates, the second ends them) records its request on the job that still runs: the rescue
// must end that job cancelled, as it would had the request come first, not retryable to run
// again.
func TestRescueSeesCancelBetweenItsScripts(t *testing.T) {
	ctx := t.Context()
	clk := clockwork.NewFakeClockAt(time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC))
	s := open(t, WithClock(clk))
	if _, err := s.Insert(ctx, []store.InsertParams{job("k")}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Claim(ctx, store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 1, Owner: "node-1", LeaseFor: time.Second})
	if err != nil || len(got) != 1 {
		t.Fatalf("Claim = %v, %v; want one job", got, err)
	}
	clk.Advance(time.Minute)
	s.betweenRescueScripts = func() {
		if j, err := s.Cancel(ctx, got[0].ID); err != nil || !j.CancelRequested {
			t.Errorf("Cancel = %+v, %v; want the request recorded on the running job", j, err)
		}
	}
	rescued, err := s.Rescue(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rescued) != 1 || rescued[0].State != store.StateCancelled {
		t.Fatalf("Rescue = %v, want the job cancelled", rescued)
	}
	if j, err := s.Get(ctx, got[0].ID); err != nil || j.State != store.StateCancelled {
		t.Fatalf("Get = %+v, %v; want the job cancelled", j, err)
	}
}
