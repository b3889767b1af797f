package postgres

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/internal/completer"
	"github.com/rotahq/rota/store"
)

// withParam returns the test URL with a run-time parameter set for every connection.
func withParam(t *testing.T, name, value string) string {
	t.Helper()
	u, err := url.Parse(testURL())
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// runningLocked opens a store whose sessions wait 100 ms for a lock (lock_timeout), claims a
// job there, and returns it with its claim and a transaction holding its row, as an admin's
// UPDATE, a long settling or a DBA's VACUUM FULL would.
func runningLocked(t *testing.T) (*Store, *store.JobRow, []*store.JobRow, pgx.Tx) {
	t.Helper()
	schema := newSchema(t)
	openSchema(t, schema, WithAutoMigrate())
	s := openURL(t, withParam(t, "lock_timeout", "100ms"), schema)
	j := mustInsert(t, s, job("k"))[0].Job
	c := claimAll(t, s, "default")
	if len(c) != 1 {
		t.Fatalf("claimed %d jobs", len(c))
	}
	tx, err := s.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	if _, err := tx.Exec(t.Context(), s.sql(`SELECT 1 FROM {schema}.jobs WHERE id = $1 FOR UPDATE`), j.ID); err != nil {
		t.Fatal(err)
	}
	return s, j, c, tx
}

// A completion that waits out the server's lock_timeout (another transaction holds the job's
// row: an admin's UPDATE, a long settling, a DBA's VACUUM FULL…) failed for a reason of the
// store's own that passes, as SQLITE_BUSY does on SQLite. It must say store.ErrUnavailable:
// otherwise the completer takes it for a refusal of the outcome and, after two tries, writes
// the outcome without the handler's result.
func TestCompleteLockTimeoutIsUnavailable(t *testing.T) {
	s, j, c, tx := runningLocked(t)
	_, err := s.Complete(t.Context(), []store.Outcome{{ID: j.ID, Fence: c[0].Fence, State: store.StateCompleted}})
	tx.Rollback(context.Background())
	if err == nil {
		t.Fatal("Complete succeeded while the row was locked past lock_timeout")
	}
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Complete after lock_timeout: %v, want store.ErrUnavailable", err)
	}
}

// The same through the completer: a job's row held past three lock timeouts keeps its result,
// written once the row is free.
func TestCompleterKeepsResultThroughLockTimeouts(t *testing.T) {
	s, j, c, tx := runningLocked(t)
	failed := make(chan completer.Failure, 10)
	comp := completer.New(s, clockwork.NewRealClock(), func(f completer.Failure) {
		t.Logf("write failed, %s next: %v", f.Next, f.Err)
		failed <- f
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go comp.Run(ctx, nil)
	done := make(chan bool, 1)
	comp.Add(store.Outcome{ID: j.ID, Fence: c[0].Fence, State: store.StateCompleted, Result: []byte(`{"total":42}`)},
		func(ok bool) { done <- ok })
	// The row stays locked through three failed writes: past the two refusals after which an
	// outcome alone is written stripped.
	for range 3 {
		select {
		case <-failed:
		case <-time.After(patience):
			t.Fatal("the write did not fail three times: the lock did not hold")
		}
	}
	tx.Rollback(context.Background())
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatal("outcome not written")
	}
	if got := mustGet(t, s, j.ID); string(got.Result) != `{"total":42}` {
		t.Fatalf("result after the row lock = %q, want {\"total\":42}", got.Result)
	}
}

// Every call of a Store whose server cannot be reached says store.ErrUnavailable, as Insert and
// Complete do (and as every call of the SQLite and Redis stores does): the API answers 503, not
// 500, for a cancel or a retry while the database is down.
func TestEveryCallUnreachableIsUnavailable(t *testing.T) {
	pool, err := pgxpool.New(t.Context(), "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := New(pool, WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	calls := map[string]func() error{
		"insert": func() error { _, err := s.Insert(ctx, []store.InsertParams{job("k")}); return err },
		"cancel": func() error { _, err := s.Cancel(ctx, 1); return err },
		"retry":  func() error { _, err := s.Retry(ctx, 1); return err },
		"delete": func() error { return s.Delete(ctx, 1) },
		"get":    func() error { _, err := s.Get(ctx, 1); return err },
		"pause":  func() error { return s.PauseQueue(ctx, "q") },
		"claim": func() error {
			_, err := s.Claim(ctx, store.ClaimParams{Queue: "q", Kinds: []string{"k"}, Max: 1, Owner: "n", LeaseFor: time.Minute})
			return err
		},
		"delete_schedule": func() error { return s.DeleteSchedule(ctx, "x") },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s on an unreachable server: %v, want store.ErrUnavailable", name, err)
		}
	}
}
