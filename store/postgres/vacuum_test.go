package postgres

import (
	"context"
	"net/url"
	"testing"
)

// makeDead leaves n dead row versions in the jobs table and makes the server's statistics count
// them at once (they are otherwise flushed up to a second later).
func makeDead(t *testing.T, s *Store, n int) {
	t.Helper()
	ctx := t.Context()
	if _, err := s.Insert(ctx, benchJobs(n)); err != nil {
		t.Fatal(err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, s.sql(`UPDATE {schema}.jobs SET priority = priority`)); err != nil {
		t.Fatal(err)
	}
	// The flush happens when the backend next goes idle: after this statement.
	if _, err := conn.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}
}

func vacuumCount(t *testing.T, s *Store) int64 {
	t.Helper()
	var n int64
	err := s.pool.QueryRow(t.Context(), s.sql(`SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = {jobs_table}::regclass`)).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Tidy vacuums the jobs table once it holds at least the threshold of dead row versions, and
// only then.
func TestTidyVacuumsPastThreshold(t *testing.T) {
	s := open(t, WithVacuumDeadMin(1000))
	makeDead(t, s, 500)
	if err := s.Tidy(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := vacuumCount(t, s); got != 0 {
		t.Fatalf("vacuumed %d times with 500 dead rows, threshold 1000", got)
	}
	makeDead(t, s, 600) // updates the 500 again too: 1,600 dead versions
	if err := s.Tidy(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := vacuumCount(t, s); got != 1 {
		t.Fatalf("vacuumed %d times past the threshold, want 1", got)
	}
}

// A negative threshold leaves the table to autovacuum.
func TestTidyOff(t *testing.T) {
	s := open(t, WithVacuumDeadMin(-1))
	makeDead(t, s, 500)
	if err := s.Tidy(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := vacuumCount(t, s); got != 0 {
		t.Fatalf("vacuumed %d times with Tidy off", got)
	}
}

// A role that does not own the jobs table cannot vacuum it: Tidy says so once, returns no error,
// and does not try again.
func TestTidyNotOwner(t *testing.T) {
	owner := open(t, WithVacuumDeadMin(0))
	ctx := t.Context()
	const role = "rota_tidy_test"
	for _, q := range []string{
		`DO $$ BEGIN CREATE ROLE ` + role + ` LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`,
		owner.sql(`GRANT USAGE ON SCHEMA {schema} TO ` + role),
		owner.sql(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO ` + role),
	} {
		if _, err := owner.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = owner.pool.Exec(ctx, owner.sql(`REVOKE ALL ON ALL TABLES IN SCHEMA {schema} FROM `+role))
		_, _ = owner.pool.Exec(ctx, owner.sql(`REVOKE ALL ON SCHEMA {schema} FROM `+role))
	})
	u, err := url.Parse(testURL())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	other := openURL(t, u.String(), owner.cfg.schema, WithVacuumDeadMin(0))
	makeDead(t, owner, 100)
	for range 2 {
		if err := other.Tidy(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !other.vacuumRefused.Load() {
		t.Fatal("Tidy did not notice that the role cannot vacuum")
	}
	if got := vacuumCount(t, owner); got != 0 {
		t.Fatalf("vacuum count %d, want 0", got)
	}
}
