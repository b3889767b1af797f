package sqlite_test

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
	"github.com/rotahq/rota/store/storetest"
)

// Two handles on one file (two processes' stores) end a dependent's last dependencies at once,
// and insert a dependent while its dependency completes.
func TestDepRacesTwoStores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rota.db")
	a, b := open(t, path), open(t, path)
	t.Run("LastDepsRace", func(t *testing.T) { storetest.LastDepsRace(t, a, b) })
	t.Run("InsertDepRace", func(t *testing.T) { storetest.InsertDepRace(t, a, b) })
}

// A count of one that version 10 wrote for a job waiting for one dependency goes with the
// migration to version 11, which keeps none for such a job; the job, which waits by an edge as
// every version before 13 wrote it, is released by that dependency's completion all the same.
func TestCountOfOneMigrated(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "rota.db"))
	insert := func(p store.InsertParams) *store.JobRow { return insertOne(t, s, p) }
	root := insert(store.InsertParams{Kind: "root", Queue: "default", Args: []byte(`{}`), MaxAttempts: 1})
	dep := insert(store.InsertParams{Kind: "dep", Queue: "default", Args: []byte(`{}`), MaxAttempts: 1, DependsOn: []int64{root.ID}})
	for _, q := range []string{
		`INSERT INTO job_deps (dep_id, job_id) VALUES (` + strconv.FormatInt(root.ID, 10) + `, ` + strconv.FormatInt(dep.ID, 10) + `)`,
		`INSERT INTO job_waits (job_id, pending, ignore_failed) VALUES (` + strconv.FormatInt(dep.ID, 10) + `, 1, 0)`,
		`DROP TABLE job_settling`,  // version 12's
		`DROP INDEX jobs_waits_on`, // version 13's
		`ALTER TABLE jobs DROP COLUMN waits_on`,
		`UPDATE rota_meta SET value = '10' WHERE key = 'schema_version'`,
	} {
		if _, err := s.DB().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var counts int
	if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM job_waits`).Scan(&counts); err != nil || counts != 0 {
		t.Fatalf("%d counts after the migration (%v), want none", counts, err)
	}
	claimed, err := s.Claim(ctx, store.ClaimParams{Queue: "default", Kinds: []string{"root"}, Max: 1, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim of the root: %v, %v", claimed, err)
	}
	if _, err := s.Complete(ctx, []store.Outcome{{ID: root.ID, Fence: claimed[0].Fence, State: store.StateCompleted}}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, dep.ID); err != nil || got.State != store.StateAvailable {
		t.Fatalf("the dependent after its dependency completed: %v, %v; want available", got, err)
	}
}

// A job that waits for one job alone names it in waits_on and has no edge (schema 0013); a
// second wait given to it (DependencyOf) turns that into an edge beside the new one, with a
// count of two, and it is released by the end of both.
func TestOneWaitHasNoEdge(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "rota.db"))
	insert := func(p store.InsertParams) *store.JobRow { return insertOne(t, s, p) }
	count := func(query string, args ...any) int {
		t.Helper()
		var n int
		if err := s.DB().QueryRowContext(ctx, query, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	run := func(kind string, id int64) {
		t.Helper()
		c, err := s.Claim(ctx, store.ClaimParams{Queue: "default", Kinds: []string{kind}, Max: 1, Owner: "n", LeaseFor: time.Minute})
		if err != nil || len(c) != 1 || c[0].ID != id {
			t.Fatalf("claim of %s: %v, %v; want job %d", kind, c, err, id)
		}
		if _, err := s.Complete(ctx, []store.Outcome{{ID: id, Fence: c[0].Fence, State: store.StateCompleted}}); err != nil {
			t.Fatal(err)
		}
	}
	root := insert(store.InsertParams{Kind: "root", Queue: "default", Args: []byte(`{}`), MaxAttempts: 1})
	dep := insert(store.InsertParams{Kind: "dep", Queue: "default", Args: []byte(`{}`), MaxAttempts: 1, DependsOn: []int64{root.ID}})
	if n := count(`SELECT count(*) FROM jobs WHERE id = ? AND waits_on = ?`, dep.ID, root.ID); n != 1 {
		t.Fatalf("the dependent does not name its one dependency in waits_on")
	}
	if n := count(`SELECT count(*) FROM job_deps`); n != 0 {
		t.Fatalf("%d edges for a job that waits for one alone, want none", n)
	}
	more := insert(store.InsertParams{Kind: "more", Queue: "default", Args: []byte(`{}`), MaxAttempts: 1, DependencyOf: dep.ID})
	if n := count(`SELECT count(*) FROM jobs WHERE id = ? AND waits_on IS NULL`, dep.ID); n != 1 {
		t.Fatalf("the dependent kept waits_on after a second wait")
	}
	if n := count(`SELECT count(*) FROM job_deps WHERE job_id = ? AND dep_id IN (?, ?)`, dep.ID, root.ID, more.ID); n != 2 {
		t.Fatalf("%d edges into the dependent after a second wait, want 2", n)
	}
	if n := count(`SELECT pending FROM job_waits WHERE job_id = ?`, dep.ID); n != 2 {
		t.Fatalf("count %d after a second wait, want 2", n)
	}
	run("root", root.ID)
	if got, err := s.Get(ctx, dep.ID); err != nil || got.State != store.StatePending {
		t.Fatalf("the dependent after one of its two dependencies: %v, %v; want pending", got, err)
	}
	run("more", more.ID)
	if got, err := s.Get(ctx, dep.ID); err != nil || got.State != store.StateAvailable {
		t.Fatalf("the dependent after both dependencies: %v, %v; want available", got, err)
	}
}

// insertOne inserts p alone into s.
func insertOne(t *testing.T, s *sqlite.Store, p store.InsertParams) *store.JobRow {
	t.Helper()
	res, err := s.Insert(t.Context(), []store.InsertParams{p})
	if err != nil {
		t.Fatal(err)
	}
	return res[0].Job
}
