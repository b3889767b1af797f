package storetest

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

// Leases and the node registry are optional (store.Leaser, store.NodeRegistry): their tests skip
// on a store without them.

var leaserTests = map[string]func(*testing.T, *env){
	"AcquireRenewTakeOver": testLeaseAcquire,
	"Release":              testLeaseRelease,
	"GetNotFound":          testLeaseNotFound,
	"Nodes":                testNodes,
}

func (e *env) leaser() store.Leaser {
	l, ok := e.s.(store.Leaser)
	if !ok {
		e.t.Skip("store does not implement store.Leaser")
	}
	return l
}

func (e *env) acquire(name, owner string, ttl time.Duration) (store.Lease, bool) {
	e.t.Helper()
	l, held, err := e.leaser().AcquireLease(e.ctx, name, owner, ttl)
	if err != nil {
		e.t.Fatalf("AcquireLease(%s, %s): %v", name, owner, err)
	}
	return l, held
}

func testLeaseAcquire(t *testing.T, e *env) {
	first, held := e.acquire("leader", "a", 30*time.Second)
	if !held || first.Owner != "a" || first.Name != "leader" || first.Token <= 0 {
		t.Fatalf("free lease: %+v held %v", first, held)
	}
	wantTime(t, "AcquiredAt", first.AcquiredAt, e.now())
	wantTime(t, "ExpiresAt", first.ExpiresAt, e.now().Add(30*time.Second))

	e.advance(10 * time.Second)
	other, held := e.acquire("leader", "b", 30*time.Second)
	if held || other.Owner != "a" || other.Token != first.Token {
		t.Fatalf("lease held by a, acquired by b: %+v held %v; want a's lease, not held", other, held)
	}
	renewed, held := e.acquire("leader", "a", 30*time.Second)
	if !held || renewed.Token != first.Token {
		t.Fatalf("renewal: %+v held %v; want the same token %d", renewed, held, first.Token)
	}
	wantTime(t, "renewed AcquiredAt", renewed.AcquiredAt, first.AcquiredAt)
	wantTime(t, "renewed ExpiresAt", renewed.ExpiresAt, e.now().Add(30*time.Second))

	if _, held := e.acquire("other", "b", time.Minute); !held {
		t.Fatal("another lease name was not free")
	}

	e.advance(31 * time.Second) // a's lease expires
	taken, held := e.acquire("leader", "b", 30*time.Second)
	if !held || taken.Owner != "b" || taken.Token <= first.Token {
		t.Fatalf("expired lease taken by b: %+v held %v; want b, token > %d", taken, held, first.Token)
	}
	wantTime(t, "taken AcquiredAt", taken.AcquiredAt, e.now())
	got, err := e.leaser().GetLease(e.ctx, "leader")
	if err != nil || got.Owner != "b" || got.Token != taken.Token {
		t.Fatalf("GetLease = %+v, %v; want b's lease", got, err)
	}
	if back, held := e.acquire("leader", "a", 30*time.Second); held {
		t.Fatalf("a took back a lease b holds: %+v", back)
	}
}

func testLeaseRelease(t *testing.T, e *env) {
	first, _ := e.acquire("leader", "a", time.Minute)
	if err := e.leaser().ReleaseLease(e.ctx, "leader", "b"); err != nil {
		t.Fatal(err)
	}
	if _, held := e.acquire("leader", "b", time.Minute); held {
		t.Fatal("release by a non-holder freed the lease")
	}
	if err := e.leaser().ReleaseLease(e.ctx, "leader", "a"); err != nil {
		t.Fatal(err)
	}
	if got, err := e.leaser().GetLease(e.ctx, "leader"); err != nil || got.Owner != "" {
		t.Fatalf("released lease: %+v, %v; want no owner", got, err)
	}
	// Free at once, before its TTL, and the next holder gets a new token, even the old owner.
	again, held := e.acquire("leader", "a", time.Minute)
	if !held || again.Token <= first.Token {
		t.Fatalf("after release: %+v held %v; want held with token > %d", again, held, first.Token)
	}
}

func testLeaseNotFound(t *testing.T, e *env) {
	if _, err := e.leaser().GetLease(e.ctx, "never"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetLease(never taken) = %v, want ErrNotFound", err)
	}
}

func testNodes(t *testing.T, e *env) {
	reg, ok := e.s.(store.NodeRegistry)
	if !ok {
		t.Skip("store does not implement store.NodeRegistry")
	}
	register := func(id string, queues ...string) {
		t.Helper()
		n := store.NodeInfo{ID: id, Host: "h-" + id, PID: 42, Version: "v1", Queues: queues, Kinds: []string{"email", "report"},
			StartedAt: epoch, RegisterEvery: 25 * time.Second}
		if err := reg.RegisterNode(e.ctx, n); err != nil {
			t.Fatalf("RegisterNode: %v", err)
		}
	}
	list := func() []store.NodeInfo {
		t.Helper()
		nodes, err := reg.ListNodes(e.ctx)
		if err != nil {
			t.Fatalf("ListNodes: %v", err)
		}
		return nodes
	}
	register("a", "default", "mail")
	e.advance(time.Second)
	register("b")
	e.advance(time.Second)
	register("c")
	e.advance(time.Second)
	register("a", "default") // refreshed: seen last
	nodes := list()
	var order []string
	for _, n := range nodes {
		order = append(order, n.ID)
	}
	if !slices.Equal(order, []string{"a", "c", "b"}) {
		t.Fatalf("ListNodes order %v, want most recently seen first [a c b]", order)
	}
	a := nodes[0]
	if a.Host != "h-a" || a.PID != 42 || a.Version != "v1" || !slices.Equal(a.Queues, []string{"default"}) ||
		!slices.Equal(a.Kinds, []string{"email", "report"}) || a.RegisterEvery != 25*time.Second {
		t.Errorf("node a: %+v", a)
	}
	wantTime(t, "StartedAt", a.StartedAt, epoch)
	wantTime(t, "LastSeen", a.LastSeen, e.now())
	if now, err := reg.Now(e.ctx); err != nil || !now.Equal(e.now()) {
		t.Errorf("Now = %v, %v; want the store's clock %v", now, err, e.now())
	}

	// Running counts the jobs running under each node's id, whatever RegisterNode was told.
	for range 4 {
		e.insertOne(store.InsertParams{Kind: "k", Queue: "default", Args: []byte(`{}`), MaxAttempts: 1})
	}
	e.claimAs("a", time.Minute, 2)
	e.claimAs("gone", time.Minute, 1) // a node that left no row
	done := e.claimAs("c", time.Minute, 1)
	e.complete(store.Outcome{ID: done[0].ID, Fence: done[0].Fence, State: store.StateCompleted})
	running := map[string]int64{}
	for _, n := range list() {
		running[n.ID] = n.Running
	}
	if want := map[string]int64{"a": 2, "b": 0, "c": 0}; !maps.Equal(running, want) {
		t.Errorf("running by node %v, want %v", running, want)
	}

	if err := reg.DeregisterNode(e.ctx, "c"); err != nil {
		t.Fatal(err)
	}
	n, err := reg.PruneNodes(e.ctx, epoch.Add(1500*time.Millisecond))
	if err != nil || n != 1 {
		t.Fatalf("PruneNodes = %d, %v; want 1 (b)", n, err)
	}
	if got := list(); len(got) != 1 || got[0].ID != "a" {
		t.Fatalf("nodes left %+v, want only a", got)
	}
}
