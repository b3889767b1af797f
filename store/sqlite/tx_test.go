package sqlite_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/rotahq/rota/store"
)

// Jobs inserted in a caller's transaction exist if and only if it commits, together with the
// caller's own writes.
func TestInsertTx(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "rota.db"))
	if _, err := s.DB().ExecContext(ctx, `CREATE TABLE orders (id INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	insert := func(commit bool) *store.JobRow {
		tx, err := s.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `INSERT INTO orders DEFAULT VALUES`); err != nil {
			t.Fatal(err)
		}
		p := job()
		p.UniqueKey = "order"
		res, err := s.InsertTx(ctx, tx, []store.InsertParams{p, job()})
		if err != nil {
			t.Fatalf("InsertTx: %v", err)
		}
		if len(res) != 2 || res[0].Duplicate || res[0].Job.ID == 0 {
			t.Fatalf("InsertTx results %+v", res)
		}
		if commit {
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		return res[0].Job
	}

	rolledBack := insert(false)
	if _, err := s.Get(ctx, rolledBack.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("job of a rolled-back transaction: Get = %v, want ErrNotFound", err)
	}
	committed := insert(true)
	got, err := s.Get(ctx, committed.ID)
	if err != nil {
		t.Fatalf("job of a committed transaction: %v", err)
	}
	if got.State != store.StateAvailable || got.UniqueKey != "order" {
		t.Fatalf("committed job %+v", got)
	}
	var orders int
	if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM orders`).Scan(&orders); err != nil || orders != 1 {
		t.Fatalf("orders = %d (%v), want 1", orders, err)
	}
	// The job is claimable through the store, and its unique key holds against a plain Insert.
	if res, err := s.Insert(ctx, []store.InsertParams{func() store.InsertParams {
		p := job()
		p.UniqueKey = "order"
		return p
	}()}); err != nil || !res[0].Duplicate || res[0].Job.ID != committed.ID {
		t.Fatalf("Insert of the same key: %+v, %v; want a duplicate of %d", res, err, committed.ID)
	}
}

func TestInsertTxWrongType(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "rota.db"))
	if _, err := s.InsertTx(t.Context(), "not a tx", []store.InsertParams{job()}); err == nil {
		t.Fatal("InsertTx with a string for tx succeeded")
	}
}
