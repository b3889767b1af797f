package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

var claimTests = map[string]func(*testing.T, *env){
	"Order":            testClaimOrder,
	"SetsRunning":      testClaimSetsRunning,
	"Max":              testClaimMax,
	"Kinds":            testClaimKinds,
	"Queues":           testClaimQueues,
	"Paused":           testClaimPaused,
	"Concurrent":       testClaimConcurrent,
	"ExpiredNeverRuns": testClaimExpired,
}

// Higher priority first, then older RunAt, then lower id; a batch is returned in that order.
func testClaimOrder(t *testing.T, e *env) {
	at := func(prio int, ago time.Duration) store.InsertParams {
		p := job("k")
		p.Priority, p.RunAt = prio, e.now().Add(-ago)
		return p
	}
	insert := func() []int64 {
		rows := e.insert(
			at(0, 3*time.Minute),  // 0
			at(10, time.Minute),   // 1
			at(10, 2*time.Minute), // 2
			at(0, 3*time.Minute),  // 3: same as 0, higher id
			at(-5, 0),             // 4
		)
		return []int64{rows[2].ID, rows[1].ID, rows[0].ID, rows[3].ID, rows[4].ID}
	}
	want := insert()
	var got []int64
	for range want {
		got = append(got, e.claimOne().ID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("claim order %v, want %v", got, want)
	}
	// A batch comes in the same order: the node starts its jobs in it.
	want = insert()
	if got := ids(e.claim("default", 10)); !slices.Equal(got, want) {
		t.Fatalf("batch claim %v, want %v", got, want)
	}
}

func testClaimSetsRunning(t *testing.T, e *env) {
	j := e.insertOne(job("k"))
	e.advance(time.Minute)
	rows := e.claimParams(store.ClaimParams{
		Queue: "default", Kinds: kinds, Max: 5, Owner: "node-7", LeaseFor: 45 * time.Second,
	})
	if len(rows) != 1 {
		t.Fatalf("claimed %d jobs, want 1", len(rows))
	}
	want := *j
	want.State, want.Attempt, want.Owner = store.StateRunning, 1, "node-7"
	want.AttemptedAt, want.LeaseUntil = e.now(), e.now().Add(45*time.Second)
	want.Fence = rows[0].Fence
	if want.Fence <= j.Fence {
		t.Errorf("fence %d after claim, want > %d", want.Fence, j.Fence)
	}
	sameJob(t, rows[0], &want)
	sameJob(t, e.get(j.ID), &want)
	if rows[0].AttemptedBy != "node-7" || e.get(j.ID).AttemptedBy != "node-7" {
		t.Errorf("attempted by %q, stored %q; want node-7", rows[0].AttemptedBy, e.get(j.ID).AttemptedBy)
	}

	// A claim under a fleet-wide limit, which takes another path in some stores, returns the
	// row as stored too.
	e.setLimit(store.Limit{Scope: store.LimitQueue, Name: "default", MaxRunning: 10})
	other := e.insertOne(job("k"))
	limited := e.claimParams(store.ClaimParams{
		Queue: "default", Kinds: kinds, Max: 5, Owner: "node-8", LeaseFor: 30 * time.Second,
	})
	if len(limited) != 1 {
		t.Fatalf("claimed %d jobs under a limit, want 1", len(limited))
	}
	stored := e.get(other.ID)
	sameJob(t, limited[0], stored)
	if stored.State != store.StateRunning || stored.Owner != "node-8" || limited[0].AttemptedBy != "node-8" ||
		stored.AttemptedBy != "node-8" || !stored.LeaseUntil.Equal(e.now().Add(30*time.Second)) {
		t.Errorf("claimed under a limit: %s by %q (attempted by %q, stored %q), lease until %v", stored.State,
			stored.Owner, limited[0].AttemptedBy, stored.AttemptedBy, stored.LeaseUntil)
	}
	e.setLimit(store.Limit{Scope: store.LimitQueue, Name: "default"})

	// A second claim of the same job (after a retry) gets a new, larger fence.
	e.completeOK(store.Outcome{ID: j.ID, Fence: want.Fence, State: store.StateRetryable, RunAt: e.now()})
	again := e.claimOne()
	if again.Attempt != 2 || again.Fence <= want.Fence {
		t.Errorf("second claim: attempt %d fence %d; want 2 and > %d", again.Attempt, again.Fence, want.Fence)
	}
}

func testClaimMax(t *testing.T, e *env) {
	for range 5 {
		e.insertOne(job("k"))
	}
	if got := e.claim("default", 2); len(got) != 2 {
		t.Fatalf("Max 2 claimed %d", len(got))
	}
	if got := e.claim("default", 10); len(got) != 3 {
		t.Fatalf("then Max 10 claimed %d, want the 3 left", len(got))
	}
	if got := e.claim("default", 10); len(got) != 0 {
		t.Fatalf("an empty queue gave %d jobs", len(got))
	}
}

// A node claims only kinds it can run; others stay available for a node that can.
func testClaimKinds(t *testing.T, e *env) {
	a, b := e.insertOne(job("a")), e.insertOne(job("b"))
	claim := func(kinds ...string) []*store.JobRow {
		return e.claimParams(store.ClaimParams{
			Queue: "default", Kinds: kinds, Max: 10, Owner: "n", LeaseFor: time.Minute,
		})
	}
	if got := claim(); len(got) != 0 {
		t.Fatalf("no kinds claimed %d jobs", len(got))
	}
	if got := claim("c"); len(got) != 0 {
		t.Fatalf("kind c claimed %d jobs", len(got))
	}
	if got := claim("b", "c"); len(got) != 1 || got[0].ID != b.ID {
		t.Fatalf("kinds b,c claimed %v, want [%d]", ids(got), b.ID)
	}
	if j := e.get(a.ID); j.State != store.StateAvailable || j.Attempt != 0 {
		t.Fatalf("job of kind a: state %s attempt %d; want untouched", j.State, j.Attempt)
	}
}

func testClaimQueues(t *testing.T, e *env) {
	q1, q2 := e.insertOne(inQueue("q1")), e.insertOne(inQueue("q2"))
	if got := e.claim("q1", 10); len(got) != 1 || got[0].ID != q1.ID {
		t.Fatalf("q1 claimed %v, want [%d]", ids(got), q1.ID)
	}
	if got := e.claim("q3", 10); len(got) != 0 {
		t.Fatalf("q3 claimed %d", len(got))
	}
	wantState(t, e.get(q2.ID), store.StateAvailable)
}

func testClaimPaused(t *testing.T, e *env) {
	e.insertOne(inQueue("q1"))
	other := e.insertOne(inQueue("q2"))
	if err := e.s.PauseQueue(e.ctx, "q1"); err != nil {
		t.Fatal(err)
	}
	if got := e.claim("q1", 10); len(got) != 0 {
		t.Fatalf("a paused queue gave %d jobs", len(got))
	}
	if got := e.claim("q2", 10); len(got) != 1 || got[0].ID != other.ID {
		t.Fatalf("pausing q1 stopped q2: claimed %v", ids(got))
	}
	if err := e.s.ResumeQueue(e.ctx, "q1"); err != nil {
		t.Fatal(err)
	}
	if got := e.claim("q1", 10); len(got) != 1 {
		t.Fatalf("a resumed queue gave %d jobs, want 1", len(got))
	}
}

// Concurrent claimers never get the same job, and together they get every job.
func testClaimConcurrent(t *testing.T, e *env) {
	const jobs, claimers = 2000, 8
	ps := make([]store.InsertParams, jobs)
	for i := range ps {
		ps[i] = job("k")
	}
	e.insert(ps...)

	got := make([][]int64, claimers)
	errs := make(chan error, claimers)
	var wg sync.WaitGroup
	for c := range claimers {
		wg.Go(func() {
			for {
				rows, err := e.s.Claim(e.ctx, store.ClaimParams{
					Queue: "default", Kinds: kinds, Max: 10, Owner: fmt.Sprint("node-", c), LeaseFor: time.Minute,
				})
				if err != nil {
					errs <- err
					return
				}
				if len(rows) == 0 {
					return
				}
				got[c] = append(got[c], ids(rows)...)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Claim: %v", err)
	}
	seen := make(map[int64]int, jobs)
	for c, list := range got {
		for _, id := range list {
			if other, dup := seen[id]; dup {
				t.Fatalf("job %d claimed by node-%d and node-%d", id, other, c)
			}
			seen[id] = c
		}
	}
	if len(seen) != jobs {
		t.Fatalf("%d jobs claimed, want %d", len(seen), jobs)
	}
}

// A job not started by its ExpiresAt is dropped: never claimed, it ends expired, and it does not
// take a place in the claimed batch.
func testClaimExpired(t *testing.T, e *env) {
	expiring := job("k")
	expiring.Priority = 10 // first in line
	expiring.ExpiresAt = e.now().Add(time.Minute)
	x := e.insertOne(expiring)

	delayed := job("k")
	delayed.Priority = 10
	delayed.RunAt = e.now().Add(time.Minute)
	delayed.ExpiresAt = e.now().Add(2 * time.Minute)
	d := e.insertOne(delayed)

	later := job("k")
	later.ExpiresAt = e.now().Add(time.Hour)
	ok := e.insertOne(later)
	plain := e.insertOne(job("k"))

	e.advance(3 * time.Minute)
	got := e.claim("default", 2)
	if !slices.Equal(ids(got), []int64{ok.ID, plain.ID}) && !slices.Equal(ids(got), []int64{plain.ID, ok.ID}) {
		t.Fatalf("claimed %v, want %d and %d", ids(got), ok.ID, plain.ID)
	}
	for _, id := range []int64{x.ID, d.ID} {
		wantFinalized(t, e.get(id), store.StateExpired, e.now())
	}
	if got := e.claim("default", 10); len(got) != 0 {
		t.Fatalf("expired jobs were claimed later: %v", ids(got))
	}
}
