package sqlite

import (
	"strconv"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
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

// allReleased checks that every dependent is available and that nothing is left parked or
// waiting: no parked end, no edge.
func allReleased(t *testing.T, s *Store, dependents []int64, when string) {
	t.Helper()
	if n := countStates(t, s, dependents); n[store.StateAvailable] != len(dependents) {
		t.Fatalf("%s: %v, want all %d available", when, n, len(dependents))
	}
	if p, e := rowsOf(t, s, "job_settling"), rowsOf(t, s, "job_deps"); p != 0 || e != 0 {
		t.Fatalf("%s: %d parked ends and %d edges left, want none", when, p, e)
	}
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

// discarded is the outcome that discards a claimed job.
func discarded(j *store.JobRow) store.Outcome {
	return store.Outcome{ID: j.ID, Fence: j.Fence, State: store.StateDiscarded, Error: &store.AttemptError{Error: "boom"}}
}

func completedOutcome(j *store.JobRow) store.Outcome {
	return store.Outcome{ID: j.ID, Fence: j.Fence, State: store.StateCompleted}
}

// parkedRelease completes a root with five dependents on a store settling two edges per
// transaction, as a Store whose process died right after its completion committed: two
// dependents released, three parked.
func parkedRelease(t *testing.T) (*Store, *store.JobRow, []int64) {
	t.Helper()
	s := openTemp(t, WithSettleBatch(2))
	root, dependents := claimedRoot(t, s, 5)
	endLeavingParked(t, s, completedOutcome(root))
	if got := countStates(t, s, dependents)[store.StateAvailable]; got != 2 {
		t.Fatalf("%d dependents released by the completing transaction, want the batch of 2", got)
	}
	if n := rowsOf(t, s, "job_settling"); n != 1 {
		t.Fatalf("%d ends parked, want the root's", n)
	}
	return s, root, dependents
}

// A completion that parks settles the rest before Complete returns: its caller sees every
// dependent released, over several settling transactions, and nothing is left behind.
func TestCompleteSettlesWhatItParked(t *testing.T) {
	s := openTemp(t, WithSettleBatch(2))
	root, dependents := claimedRoot(t, s, 7)
	if _, err := s.Complete(t.Context(), []store.Outcome{completedOutcome(root)}); err != nil {
		t.Fatal(err)
	}
	allReleased(t, s, dependents, "after Complete")
}

// A failure that parks cancels the rest as its first transaction would have, cascades
// included: each cancelled dependent's own dependents are cancelled in turn, however the
// settling is split.
func TestParkedFailureCancelsThroughCascades(t *testing.T) {
	s := openTemp(t, WithSettleBatch(2))
	root, dependents := claimedRoot(t, s, 3)
	var grand []int64
	for _, d := range dependents {
		p := settleJob("grand")
		p.DependsOn = []int64{d}
		grand = append(grand, mustInsert(t, s, p)[0].Job.ID)
	}
	if _, err := s.Complete(t.Context(), []store.Outcome{discarded(root)}); err != nil {
		t.Fatal(err)
	}
	if n := countStates(t, s, append(dependents, grand...)); n[store.StateCancelled] != 6 {
		t.Fatalf("after the discard: %v, want all 6 cancelled", n)
	}
	if p, e := rowsOf(t, s, "job_settling"), rowsOf(t, s, "job_deps"); p != 0 || e != 0 {
		t.Fatalf("%d parked ends and %d edges left, want none", p, e)
	}
}

// What a Store left parked when it died is settled by the leader's rescuer.
func TestParkedDependentsSettledByRescue(t *testing.T) {
	s, _, dependents := parkedRelease(t)
	if _, err := s.Rescue(t.Context(), 10); err != nil {
		t.Fatal(err)
	}
	allReleased(t, s, dependents, "after the rescuer")
}

// A completed job deleted while its dependents are parked releases them as its completion
// would have: the delete is not taken for a failed dependency.
func TestDeleteOfParkedDependencyReleases(t *testing.T) {
	s, root, dependents := parkedRelease(t)
	if err := s.Delete(t.Context(), root.ID); err != nil {
		t.Fatal(err)
	}
	allReleased(t, s, dependents, "after the delete")
}

// A parked end whose job is made to run again is forgotten: the dependents left wait for the
// job's next end instead of being settled by the one it had.
func TestRetriedJobForgetsItsParkedEnd(t *testing.T) {
	s := openTemp(t, WithSettleBatch(2))
	root, dependents := claimedRoot(t, s, 5)
	endLeavingParked(t, s, discarded(root))
	if n := countStates(t, s, dependents); n[store.StateCancelled] != 2 || n[store.StatePending] != 3 {
		t.Fatalf("after the discard: %v, want 2 cancelled and 3 parked pending", n)
	}
	if _, err := s.Retry(t.Context(), root.ID); err != nil {
		t.Fatal(err)
	}
	if n := rowsOf(t, s, "job_settling"); n != 0 {
		t.Fatalf("%d ends parked after the retry, want none", n)
	}
	if _, err := s.Rescue(t.Context(), 10); err != nil {
		t.Fatal(err)
	}
	if n := countStates(t, s, dependents); n[store.StatePending] != 3 {
		t.Fatalf("after the retry: %v, want the 3 still waiting", n)
	}
	if _, err := s.Complete(t.Context(), []store.Outcome{completedOutcome(claimOne(t, s, "root"))}); err != nil {
		t.Fatal(err)
	}
	if n := countStates(t, s, dependents); n[store.StateCancelled] != 2 || n[store.StateAvailable] != 3 {
		t.Fatalf("after the second end: %v, want 2 cancelled and 3 released", n)
	}
}

// A workflow retried while its failed step's end is still parked keeps that step's edges,
// though no retried step waits for it (its dependents run anyway, and none failed): the
// dependents they lead to are released by its next end instead of waiting for ever.
func TestRetryWorkflowKeepsParkedEdges(t *testing.T) {
	s := openTemp(t, WithSettleBatch(2))
	ctx := t.Context()
	ps := make([]store.InsertParams, 6)
	for i := range ps {
		ps[i] = settleJob("dep")
		ps[i].Workflow, ps[i].Step = "wf", "s"+strconv.Itoa(i)
		if i > 0 {
			ps[i].DependsOnIndex = []int{0}
			ps[i].IgnoreFailedDeps = true
		}
	}
	ps[0].Kind = "root"
	var dependents []int64
	for _, r := range mustInsert(t, s, ps...)[1:] {
		dependents = append(dependents, r.Job.ID)
	}
	endLeavingParked(t, s, discarded(claimOne(t, s, "root")))
	if n := countStates(t, s, dependents); n[store.StateAvailable] != 2 || n[store.StatePending] != 3 {
		t.Fatalf("after the discard: %v, want 2 released and 3 parked pending", n)
	}
	if _, err := s.RetryWorkflow(ctx, "wf"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, []store.Outcome{completedOutcome(claimOne(t, s, "root"))}); err != nil {
		t.Fatal(err)
	}
	if n := countStates(t, s, dependents); n[store.StateAvailable] != len(dependents) {
		t.Fatalf("after the retried step completed: %v, want all %d available", n, len(dependents))
	}
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
	if _, err := s.Complete(ctx, []store.Outcome{discarded(claimOne(t, s, "b"))}); err != nil {
		t.Fatal(err)
	}
	// a completes with one of its two edges settled, d's (edges go in id order), c's parked.
	endLeavingParked(t, s, completedOutcome(claimOne(t, s, "a")))
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
	if _, err := s.Complete(ctx, []store.Outcome{completedOutcome(claimOne(t, s, "b"))}); err != nil {
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
