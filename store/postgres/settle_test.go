package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/storetest"
)

// claimedRoot inserts a root job with n dependents on s and claims the root.
func claimedRoot(t *testing.T, s *Store, n int) (*store.JobRow, []int64) {
	t.Helper()
	root := mustInsert(t, s, job("root"))[0].Job
	deps := make([]store.InsertParams, n)
	for i := range deps {
		deps[i] = job("dep")
		deps[i].DependsOn = []int64{root.ID}
	}
	var ids []int64
	for _, r := range mustInsert(t, s, deps...) {
		ids = append(ids, r.Job.ID)
	}
	claimed, err := s.Claim(t.Context(), store.ClaimParams{Queue: "default", Kinds: []string{"root"}, Max: 1, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	return claimed[0], ids
}

func countStates(t *testing.T, s *Store, ids []int64) map[store.State]int {
	t.Helper()
	n := make(map[store.State]int)
	for _, id := range ids {
		n[mustGet(t, s, id).State]++
	}
	return n
}

// count returns the rows of one of the schema's tables.
func count(t *testing.T, s *Store, table string) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(t.Context(), s.sql(`SELECT count(*) FROM {schema}.`+table)).Scan(&n); err != nil {
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
	if p, e := count(t, s, "job_settling"), count(t, s, "job_deps"); p != 0 || e != 0 {
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

// The shared settling scenarios, on a store that settles two edges per transaction.
func TestSettling(t *testing.T) {
	storetest.Settling(t, storetest.Parking{
		Open: func(t *testing.T, clk clockwork.Clock) store.Store {
			return open(t, WithClock(clk), WithSettleBatch(2))
		},
		CompleteLeavingParked: func(t *testing.T, s store.Store, o store.Outcome) {
			endLeavingParked(t, s.(*Store), o)
		},
		Left: func(t *testing.T, s store.Store) (parked, edges int) {
			return count(t, s.(*Store), "job_settling"), count(t, s.(*Store), "job_deps")
		},
	})
}

// parkedRelease completes a root with five dependents on a store settling two edges per
// transaction, as a Store whose process died right after its completion committed: two
// dependents released, three parked.
func parkedRelease(t *testing.T) (*Store, *store.JobRow, []int64) {
	t.Helper()
	s := open(t, WithSettleBatch(2))
	root, dependents := claimedRoot(t, s, 5)
	endLeavingParked(t, s, store.Outcome{ID: root.ID, Fence: root.Fence, State: store.StateCompleted})
	if got := countStates(t, s, dependents)[store.StateAvailable]; got != 2 {
		t.Fatalf("%d dependents released by the completing transaction, want the batch of 2", got)
	}
	if n := count(t, s, "job_settling"); n != 1 {
		t.Fatalf("%d ends parked, want the root's", n)
	}
	return s, root, dependents
}

// openSettler starts a settler's transaction that settles one edge of the parked end and parks
// it again, and leaves it open (rolled back when the test ends unless committed); it returns
// the transaction and its backend's pid.
func openSettler(t *testing.T, s *Store) (pgx.Tx, uint32) {
	t.Helper()
	ctx := t.Context()
	tx, pid := openTx(t, s)
	if _, err := tx.Exec(ctx, resolvePrefixSQL, 1); err != nil {
		t.Fatal(err)
	}
	var more bool
	if err := tx.QueryRow(ctx, s.sql(settleSQL), s.now(), settleEnds).Scan(&more); err != nil || !more {
		t.Fatalf("settle_parked = %v, %v; want the end parked again", more, err)
	}
	return tx, pid
}

// A job made to run again while a settler works on its parked end waits for the settler, then
// forgets the end the settler parked again: its dependents left wait for its next end.
func TestRetryWaitsForAConcurrentSettler(t *testing.T) {
	s := open(t, WithSettleBatch(2))
	ctx := t.Context()
	root, dependents := claimedRoot(t, s, 5)
	endLeavingParked(t, s, storetest.Discarded(root))
	tx, pid := openSettler(t, s)
	retried := make(chan error, 1)
	go func() {
		_, err := s.Retry(ctx, root.ID)
		retried <- err
	}()
	waitBlockedBy(t, s, pid, "Retry")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-retried; err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, "job_settling"); n != 0 {
		t.Fatalf("%d ends parked after the retry, want none", n)
	}
	if n := countStates(t, s, dependents); n[store.StateCancelled] != 3 || n[store.StatePending] != 2 {
		t.Fatalf("after the retry: %v, want 3 cancelled and 2 waiting", n)
	}
}

// A settler that finds every parked end held by another settler returns at once instead of
// waiting for it: the other finishes them (or the next rescue does).
func TestSettlerLeavesEndsHeldByAnother(t *testing.T) {
	s, _, dependents := parkedRelease(t)
	ctx := t.Context()
	tx, _ := openSettler(t, s)
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.settleAll(waitCtx); err != nil {
		t.Fatalf("a second settler waited for the first: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.settleAll(ctx); err != nil {
		t.Fatal(err)
	}
	allReleased(t, s, dependents, "after both settlers")
}

// A job made to run again holds its row before it deletes its parked end (jobs_reopened); a
// settler that picked that end meanwhile leaves it, rather than wait for the job while holding
// the entry the job's transaction waits for. Both sides commit, and the dependents left wait for
// the job's next end. Before, each waited for the other and PostgreSQL aborted one, a deadlock.
func TestSettlerLeavesAnEndWhoseJobIsHeld(t *testing.T) {
	s := open(t, WithSettleBatch(2))
	ctx := t.Context()
	root, dependents := claimedRoot(t, s, 5)
	endLeavingParked(t, s, storetest.Discarded(root))
	// A RetryWorkflow, caught between locking its steps and making them run again.
	tx, pid := openTx(t, s)
	if _, err := tx.Exec(ctx, s.sql(`SELECT 1 FROM {schema}.jobs WHERE id = $1 FOR UPDATE`), root.ID); err != nil {
		t.Fatal(err)
	}
	settled := make(chan error, 1)
	go func() { settled <- s.settleAll(ctx) }()
	// The settler either passes the held end by, or waits for the job (as it once did).
	var settleErr error
	select {
	case settleErr = <-settled:
	case <-blockedBy(t, s, pid):
		settled = nil
	}
	if _, err := tx.Exec(ctx, s.sql(`UPDATE {schema}.jobs SET state = 'available', finalized_at = NULL WHERE id = $1`), root.ID); err != nil {
		t.Fatalf("making the job run again while a settler picked its end: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if settled == nil {
		t.Fatal("the settler waited for the held job while holding its end")
	}
	if settleErr != nil {
		t.Fatal(settleErr)
	}
	if n := count(t, s, "job_settling"); n != 0 {
		t.Fatalf("%d ends parked after the job was made to run again, want none", n)
	}
	if n := countStates(t, s, dependents); n[store.StateCancelled] != 2 || n[store.StatePending] != 3 {
		t.Fatalf("dependents: %v, want the 2 its end cancelled and 3 waiting for its next end", n)
	}
}
