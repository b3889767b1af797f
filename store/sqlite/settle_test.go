package sqlite

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/storetest"
)

// settleJob is a job of kind k that runs once.
func settleJob(k string) store.InsertParams {
	return store.InsertParams{Kind: k, Queue: "default", Args: []byte(`{}`), MaxAttempts: 1}
}

func mustInsert(t *testing.T, s *Store, ps ...store.InsertParams) []store.InsertResult {
	t.Helper()
	res, err := s.Insert(t.Context(), ps)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// claimOne claims the one available job of kind k.
func claimOne(t *testing.T, s *Store, k string) *store.JobRow {
	t.Helper()
	c, err := s.Claim(t.Context(), store.ClaimParams{Queue: "default", Kinds: []string{k}, Max: 1, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(c) != 1 {
		t.Fatalf("claim %s: %v, %v", k, c, err)
	}
	return c[0]
}

// claimedRoot inserts a root job with n dependents on s and claims the root.
func claimedRoot(t *testing.T, s *Store, n int) (*store.JobRow, []int64) {
	t.Helper()
	root := mustInsert(t, s, settleJob("root"))[0].Job
	deps := make([]store.InsertParams, n)
	for i := range deps {
		deps[i] = settleJob("dep")
		deps[i].DependsOn = []int64{root.ID}
	}
	var ids []int64
	for _, r := range mustInsert(t, s, deps...) {
		ids = append(ids, r.Job.ID)
	}
	return claimOne(t, s, "root"), ids
}

func countStates(t *testing.T, s *Store, ids []int64) map[store.State]int {
	t.Helper()
	n := make(map[store.State]int)
	for _, id := range ids {
		j, err := s.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		n[j.State]++
	}
	return n
}

// rowsOf counts the rows of one of the store's tables.
func rowsOf(t *testing.T, s *Store, table string) int {
	t.Helper()
	var n int
	if err := s.db.QueryRowContext(t.Context(), `SELECT count(*) FROM `+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// endLeavingParked writes outcome o as a Store whose process died right after the write
// committed would have: what it parked stays parked.
func endLeavingParked(t *testing.T, s *Store, o store.Outcome) {
	t.Helper()
	s.leaveParked = true
	defer func() { s.leaveParked = false }()
	if _, err := s.Complete(t.Context(), []store.Outcome{o}); err != nil {
		t.Fatal(err)
	}
}

// The shared settling scenarios, on a store that settles two edges per transaction.
func TestSettling(t *testing.T) {
	storetest.Settling(t, storetest.Parking{
		Open: func(t *testing.T, clk clockwork.Clock) store.Store {
			return openTemp(t, WithClock(clk), WithSettleBatch(2))
		},
		CompleteLeavingParked: func(t *testing.T, s store.Store, o store.Outcome) {
			endLeavingParked(t, s.(*Store), o)
		},
		Left: func(t *testing.T, s store.Store) (parked, edges int) {
			// A pending job that waits for one job alone has no edge: its waits_on is one.
			return rowsOf(t, s.(*Store), "job_settling"),
				rowsOf(t, s.(*Store), "job_deps") + rowsOf(t, s.(*Store), "jobs WHERE waits_on IS NOT NULL")
		},
	})
}

// parkedRelease completes a root with five dependents on a store settling two edges per
// transaction, as a Store whose process died right after its completion committed: two
// dependents released, three parked.
func parkedRelease(t *testing.T) (*Store, *store.JobRow, []int64) {
	t.Helper()
	s := openTemp(t, WithSettleBatch(2))
	root, dependents := claimedRoot(t, s, 5)
	endLeavingParked(t, s, storetest.Completed(root))
	if got := countStates(t, s, dependents)[store.StateAvailable]; got != 2 {
		t.Fatalf("%d dependents released by the completing transaction, want the batch of 2", got)
	}
	return s, root, dependents
}

// A step retried while a dependency it no longer waits for has its end parked is not counted
// off by that end when it is settled: the retry forgot the edge of its last wait.
func TestRetriedStepLosesStaleEdges(t *testing.T) {
	s := openTemp(t, WithSettleBatch(1))
	ctx := t.Context()
	// a has two dependents: d, and c, which also waits for b; b fails and cancels c.
	ps := []store.InsertParams{settleJob("a"), settleJob("b"), settleJob("d"), settleJob("c")}
	for i := range ps {
		ps[i].Workflow, ps[i].Step = "wf", ps[i].Kind
	}
	ps[2].DependsOnIndex = []int{0}
	ps[3].DependsOnIndex = []int{0, 1}
	res := mustInsert(t, s, ps...)
	d, c := res[2].Job.ID, res[3].Job.ID
	if _, err := s.Complete(ctx, []store.Outcome{storetest.Discarded(claimOne(t, s, "b"))}); err != nil {
		t.Fatal(err)
	}
	// a completes with one of its two edges settled, d's (edges go in id order), c's parked.
	endLeavingParked(t, s, storetest.Completed(claimOne(t, s, "a")))
	if n := rowsOf(t, s, "job_settling"); n != 1 {
		t.Fatalf("%d ends parked, want a's", n)
	}
	// Retried, c waits for b alone (a completed).
	if _, err := s.RetryWorkflow(ctx, "wf"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rescue(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if n := countStates(t, s, []int64{c, d}); n[store.StatePending] != 1 || n[store.StateAvailable] != 1 {
		t.Fatalf("after the settling: %v, want c pending (for b) and d released", n)
	}
	if j, err := s.Get(ctx, c); err != nil || j.State != store.StatePending {
		t.Fatalf("c: %v, %v; want pending", j, err)
	}
	if _, err := s.Complete(ctx, []store.Outcome{storetest.Completed(claimOne(t, s, "b"))}); err != nil {
		t.Fatal(err)
	}
	if j, err := s.Get(ctx, c); err != nil || j.State != store.StateAvailable {
		t.Fatalf("c after b completed: %v, %v; want available", j, err)
	}
}

// Completions that share a transaction share its settle batch: two requests of one group, each
// ending a root with five dependents, release two dependents in all with a batch of two.
func TestSettleBatchIsPerTransaction(t *testing.T) {
	w, db, _ := groupWriter(t)
	w.settleBatch = 2
	ctx := t.Context()
	var roots []int64
	setup := &request{ctx: ctx, done: make(chan error, 1), fn: func(x *wtx) error {
		roots = nil
		for range 2 {
			res, _, err := insertJobs(x, x.now, []store.InsertParams{settleJob("root")})
			if err != nil {
				return err
			}
			deps := make([]store.InsertParams, 5)
			for i := range deps {
				deps[i] = settleJob("dep")
				deps[i].DependsOn = []int64{res[0].Job.ID}
			}
			if _, _, err := insertJobs(x, x.now, deps); err != nil {
				return err
			}
			roots = append(roots, res[0].Job.ID)
		}
		return nil
	}}
	w.runGroup([]*request{setup})
	if setup.err != nil {
		t.Fatal(setup.err)
	}
	var group []*request
	for _, root := range roots {
		group = append(group, &request{ctx: ctx, done: make(chan error, 1), fn: func(x *wtx) error {
			_, err := resolveBounded(x, ended{id: root, state: store.StateCompleted})
			return err
		}})
	}
	w.runGroup(group)
	for _, r := range group {
		if r.err != nil {
			t.Fatal(r.err)
		}
	}
	var released, parked int
	if err := db.QueryRow(`SELECT (SELECT count(*) FROM jobs WHERE kind = 'dep' AND state = 'available'),
		(SELECT count(*) FROM job_settling)`).Scan(&released, &parked); err != nil {
		t.Fatal(err)
	}
	if released != 2 || parked != 2 {
		t.Fatalf("one transaction with a settle batch of 2: %d dependents released and %d ends parked, want 2 and both", released, parked)
	}
}

// A parked end whose job runs again by a path that did not forget it is dropped by the settler,
// not settled: the dependents left wait for the job's next end.
func TestSettlerDropsAnEndWhoseJobRunsAgain(t *testing.T) {
	s, root, dependents := parkedRelease(t)
	if _, err := s.db.ExecContext(t.Context(), `UPDATE jobs SET state = 'available', finalized_at = NULL WHERE id = ?`, root.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rescue(t.Context(), 10); err != nil {
		t.Fatal(err)
	}
	if n := countStates(t, s, dependents); n[store.StateAvailable] != 2 || n[store.StatePending] != 3 {
		t.Fatalf("after the settler: %v, want 2 released and 3 still waiting", n)
	}
	if n := rowsOf(t, s, "job_settling"); n != 0 {
		t.Fatalf("%d ends parked after the settler, want none", n)
	}
}

// A failed end whose waiters use up the settle batch exactly parks nothing: they are cancelled
// in the same transaction, so nothing of it is left to settle.
func TestFailedEndWithinBatchParksNothing(t *testing.T) {
	s := openTemp(t, WithSettleBatch(2))
	root, dependents := claimedRoot(t, s, 2)
	endLeavingParked(t, s, storetest.Discarded(root))
	if got := countStates(t, s, dependents)[store.StateCancelled]; got != 2 {
		t.Fatalf("%d of 2 dependents cancelled, want both", got)
	}
	if n := rowsOf(t, s, "job_settling"); n != 0 {
		t.Fatalf("%d ends parked after a failure that settled all it had, want none", n)
	}
}
