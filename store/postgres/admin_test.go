package postgres

import (
	"errors"
	"testing"

	"github.com/rotahq/rota/store"
)

// deleteWhileHeld runs Delete of job id while another transaction holds its row, having run
// held on it, and returns Delete's error once that transaction commits.
func deleteWhileHeld(t *testing.T, s *Store, id int64, held string) error {
	t.Helper()
	ctx := t.Context()
	tx, pid := openTx(t, s)
	if _, err := tx.Exec(ctx, s.sql(held), id); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Delete(ctx, id) }()
	waitBlockedBy(t, s, pid, "Delete")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return <-done
}

// A Delete that waits for another transaction deleting the same job reports it gone, not
// running: its statement saw the job in its snapshot, but the row it waited for was removed.
func TestDeleteOfAJobDeletedMeanwhileIsNotFound(t *testing.T) {
	s := open(t)
	id := mustInsert(t, s, job("k"))[0].Job.ID
	if err := deleteWhileHeld(t, s, id, `DELETE FROM {schema}.jobs WHERE id = $1`); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Delete of a job deleted meanwhile = %v, want ErrNotFound", err)
	}
}

// A Delete that waits for a claim of the job reports it running: the claim committed first.
func TestDeleteOfAJobClaimedMeanwhileIsRunning(t *testing.T) {
	s := open(t)
	id := mustInsert(t, s, job("k"))[0].Job.ID
	err := deleteWhileHeld(t, s, id, `UPDATE {schema}.jobs SET state = 'running', attempt = attempt + 1,
		fence = fence + 1, owner = 'n', attempted_by = 'n', attempted_at = now(), lease_until = now() + interval '1 minute'
		WHERE id = $1`)
	if !errors.Is(err, store.ErrJobRunning) {
		t.Fatalf("Delete of a job claimed meanwhile = %v, want ErrJobRunning", err)
	}
	if got := mustGet(t, s, id); got.State != store.StateRunning {
		t.Fatalf("job after the refused delete: %s, want running", got.State)
	}
}
