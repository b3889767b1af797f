package rota

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

// gatedClaims is leaseOutage whose next claim, once gate is set, waits to be let through.
type gatedClaims struct {
	*leaseOutage
	gate    atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *gatedClaims) Claim(ctx context.Context, p store.ClaimParams) ([]*store.JobRow, error) {
	if g.gate.CompareAndSwap(true, false) {
		g.entered <- struct{}{}
		<-g.release
	}
	return g.leaseOutage.Claim(ctx, p)
}

// A claim asked for while the node held a singleton lease, and answered after the node lost
// it, must not run the kind's jobs: another node may hold the lease by then. They go back to
// their queue as handBack sends running ones, their attempt refunded, their handler never
// called.
func TestAClaimAnsweredAfterTheSingletonIsLostHandsItsJobsBack(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "rota.db"), sqlite.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	g := &gatedClaims{leaseOutage: &leaseOutage{Store: st}, entered: make(chan struct{}, 1), release: make(chan struct{})}
	var ran atomic.Bool
	n, events := startSingletonNode(t, g, func(context.Context, *Job[testArgs]) error {
		ran.Store(true)
		return nil
	})
	g.gate.Store(true)
	ins, err := n.Client().Insert(context.Background(), testArgs{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	job := ins.Job
	recv(t, g.entered) // a claim is on its way, asked for while the lease was held
	g.out.Store(true)
	waitEvent(t, events, EventSingletonLost)
	close(g.release) // the claim comes back after the loss
	ev := waitEvent(t, events, EventJobHandedBack)
	if ev.Job.ID != job.ID {
		t.Fatalf("handed back job %d, want %d", ev.Job.ID, job.ID)
	}
	if ran.Load() {
		t.Fatal("the handler ran on a node that had lost the singleton lease")
	}
	got, err := st.Get(context.Background(), job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != StateAvailable || got.Attempt != 0 {
		t.Fatalf("job is %s at attempt %d, want available at attempt 0", got.State, got.Attempt)
	}
}
