package postgres

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
)

func TestLease(t *testing.T) {
	clk := clockwork.NewFakeClockAt(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC))
	s := open(t, WithClock(clk))
	ctx := t.Context()
	acquire := func(owner string, wantHeld bool) store.Lease {
		t.Helper()
		l, held, err := s.AcquireLease(ctx, "leader", owner, 30*time.Second)
		if err != nil {
			t.Fatalf("AcquireLease(%s): %v", owner, err)
		}
		if held != wantHeld {
			t.Fatalf("AcquireLease(%s): held %v, want %v (lease %+v)", owner, held, wantHeld, l)
		}
		return l
	}
	if _, err := s.GetLease(ctx, "leader"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetLease of a lease never taken: %v", err)
	}
	a := acquire("a", true)
	if a.Owner != "a" || !a.ExpiresAt.Equal(clk.Now().Add(30*time.Second)) || !a.AcquiredAt.Equal(clk.Now()) {
		t.Fatalf("lease %+v", a)
	}
	// Held by a: b is refused and told who holds it.
	if l := acquire("b", false); l.Owner != "a" || l.Token != a.Token {
		t.Fatalf("refused acquire returned %+v, want a's lease", l)
	}
	// A renewal keeps the token and moves the expiry.
	clk.Advance(10 * time.Second)
	renewed := acquire("a", true)
	if renewed.Token != a.Token || !renewed.ExpiresAt.Equal(clk.Now().Add(30*time.Second)) || !renewed.AcquiredAt.Equal(a.AcquiredAt) {
		t.Fatalf("renewal %+v, from %+v", renewed, a)
	}
	// Held up to its expiry, inclusive; taken by another owner after it, with a larger token.
	clk.Advance(30 * time.Second)
	acquire("b", false)
	clk.Advance(time.Microsecond)
	b := acquire("b", true)
	if b.Token <= a.Token {
		t.Fatalf("token %d after changing hands, want > %d", b.Token, a.Token)
	}
	// Release by someone else does nothing; by the holder frees it at once.
	if err := s.ReleaseLease(ctx, "leader", "a"); err != nil {
		t.Fatal(err)
	}
	acquire("a", false)
	if err := s.ReleaseLease(ctx, "leader", "b"); err != nil {
		t.Fatal(err)
	}
	if l, err := s.GetLease(ctx, "leader"); err != nil || l.Owner != "" {
		t.Fatalf("released lease: %+v, %v", l, err)
	}
	// Even its last holder gets a new token: it is a new tenure.
	if again := acquire("b", true); again.Token <= b.Token {
		t.Fatalf("token %d after release, want > %d", again.Token, b.Token)
	}
}

// Of many nodes racing for a free lease, one gets it.
func TestLeaseConcurrent(t *testing.T) {
	s := open(t)
	const n = 10
	held := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, held[i], errs[i] = s.AcquireLease(t.Context(), "race", fmt.Sprint("node-", i), time.Minute)
		})
	}
	wg.Wait()
	winners := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("node %d: %v", i, errs[i])
		}
		if held[i] {
			winners++
		}
	}
	if winners != 1 {
		t.Fatalf("%d nodes hold the lease, want 1", winners)
	}
}

func TestNodeRegistry(t *testing.T) {
	clk := clockwork.NewFakeClockAt(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC))
	s := open(t, WithClock(clk))
	ctx := t.Context()
	register := func(id string) {
		t.Helper()
		err := s.RegisterNode(ctx, store.NodeInfo{ID: id, Host: "h", PID: 42, Version: "v1",
			Queues: []string{"default"}, StartedAt: clk.Now()})
		if err != nil {
			t.Fatal(err)
		}
	}
	register("old")
	clk.Advance(time.Minute)
	register("new")
	nodes, err := s.ListNodes(ctx)
	if err != nil || len(nodes) != 2 || nodes[0].ID != "new" || !nodes[0].LastSeen.Equal(clk.Now()) ||
		nodes[1].Queues[0] != "default" || nodes[1].PID != 42 {
		t.Fatalf("ListNodes = %+v, %v", nodes, err)
	}
	if now, err := s.Now(ctx); err != nil || !now.Equal(clk.Now()) {
		t.Fatalf("Now = %v, %v; want %v", now, err, clk.Now())
	}
	if n, err := s.PruneNodes(ctx, clk.Now().Add(-time.Second)); err != nil || n != 1 {
		t.Fatalf("PruneNodes = %d, %v; want 1", n, err)
	}
	if err := s.DeregisterNode(ctx, "new"); err != nil {
		t.Fatal(err)
	}
	if nodes, _ := s.ListNodes(ctx); len(nodes) != 0 {
		t.Fatalf("nodes left: %+v", nodes)
	}
}
