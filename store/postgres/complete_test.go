package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotahq/rota/store"
)

// A Cancel that commits while a Complete of the same running job waits for the row: the retry
// outcome ends the job cancelled, as the contract says. Complete must read cancel_requested in
// the UPDATE, after the wait, not in a snapshot taken before it.
func TestCompleteSeesACancelCommittedWhileItWaited(t *testing.T) {
	ctx := t.Context()
	s := open(t)
	j := mustInsert(t, s, job("k"))[0].Job
	rows, err := s.Claim(ctx, store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 1, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(rows) != 1 {
		t.Fatal(rows, err)
	}
	// The user's Cancel, caught between its row lock and its commit.
	tx, cancelPID := openTx(t, s)
	if _, err := tx.Exec(ctx, s.sql(`UPDATE {schema}.jobs SET cancel_requested = true WHERE id = $1 AND state = 'running'`), j.ID); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Complete(ctx, []store.Outcome{{ID: j.ID, Fence: rows[0].Fence, State: store.StateRetryable,
			RunAt: time.Now().Add(time.Minute), Error: &store.AttemptError{Attempt: 1, At: time.Now(), Error: "boom"}}})
		done <- err
	}()
	waitBlockedBy(t, s, cancelPID, "Complete")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, j.ID); got.State != store.StateCancelled {
		t.Fatalf("cancel committed during Complete: job %s (CancelRequested %v), want cancelled", got.State, got.CancelRequested)
	}
}

// openTx begins a transaction that a test holds open across another call, and returns it with
// its backend's pid; it is rolled back when the test ends unless committed.
func openTx(t *testing.T, s *Store) (pgx.Tx, uint32) {
	t.Helper()
	tx, err := s.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	var pid uint32
	if err := tx.QueryRow(t.Context(), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return tx, pid
}

// waitBlockedBy waits until the server shows a backend waiting for a lock that backend pid
// holds: what, the call made in another goroutine, has read what it is about to change.
func waitBlockedBy(t *testing.T, s *Store, pid uint32, what string) {
	t.Helper()
	select {
	case <-blockedBy(t, s, pid):
	case <-time.After(patience):
		t.Fatalf("%s never waited for the row lock of backend %d", what, pid)
	}
}

// blockedBy is closed once the server shows a backend waiting for a lock that backend pid
// holds; it looks until the test ends.
func blockedBy(t *testing.T, s *Store, pid uint32) <-chan struct{} {
	t.Helper()
	ctx := t.Context()
	conn, err := s.pool.Acquire(ctx) // its own connection: the pool may be busy with the waiter
	if err != nil {
		t.Fatal(err)
	}
	blocked := make(chan struct{})
	go func() {
		defer conn.Release()
		for ctx.Err() == nil {
			var yes bool
			err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
				WHERE $1::int = ANY (pg_blocking_pids(pid)))`, int32(pid)).Scan(&yes)
			if err == nil && yes {
				close(blocked)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return blocked
}
