package sqlite_test

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
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
// migration to version 11, which keeps none for such a job; the job is released by that
// dependency's completion all the same.
func TestCountOfOneMigrated(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "rota.db"))
	insert := func(p store.InsertParams) *store.JobRow {
		t.Helper()
		res, err := s.Insert(ctx, []store.InsertParams{p})
		if err != nil {
			t.Fatal(err)
		}
		return res[0].Job
	}
	root := insert(store.InsertParams{Kind: "root", Queue: "default", Args: []byte(`{}`), MaxAttempts: 1})
	dep := insert(store.InsertParams{Kind: "dep", Queue: "default", Args: []byte(`{}`), MaxAttempts: 1, DependsOn: []int64{root.ID}})
	for _, q := range []string{
		`INSERT INTO job_waits (job_id, pending, ignore_failed) VALUES (` + strconv.FormatInt(dep.ID, 10) + `, 1, 0)`,
		`DROP TABLE job_settling`, // version 12's
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
