package sqlite_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/storetest"
)

// Limits are in the file: a store opened again enforces them, starts recorded before included.
func TestLimitsSurviveReopen(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "rota.db")
	limits := []store.Limit{
		{Scope: store.LimitKind, Name: "k", Rate: 1, Period: time.Hour},
		{Scope: store.LimitQueue, Name: "default", MaxRunning: 1},
	}
	s := open(t, path)
	for _, l := range limits {
		if err := s.SetLimit(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Insert(ctx, []store.InsertParams{job(), job()}); err != nil {
		t.Fatal(err)
	}
	claim := store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 10, Owner: "n", LeaseFor: time.Minute}
	first, err := s.Claim(ctx, claim)
	if err != nil || len(first) != 1 {
		t.Fatalf("Claim = %d jobs, %v; want 1", len(first), err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	again := open(t, path)
	got, err := again.ListLimits(ctx)
	if err != nil || !slices.Equal(got, limits) {
		t.Fatalf("ListLimits after reopening = %+v, %v; want %+v", got, err, limits)
	}
	done := store.Outcome{ID: first[0].ID, Fence: first[0].Fence, State: store.StateCompleted}
	if _, err := again.Complete(ctx, []store.Outcome{done}); err != nil {
		t.Fatal(err)
	}
	// MaxRunning has room again, but the start before reopening still fills the hour's rate.
	if rows, err := again.Claim(ctx, claim); err != nil || len(rows) != 0 {
		t.Fatalf("Claim after reopening = %d jobs, %v; want none", len(rows), err)
	}
}

// Two stores on one file are two writers, as two processes are: the file's write lock, taken
// before a claim counts, keeps the limit.
func TestLimitRaceTwoStores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rota.db")
	storetest.LimitRace(t, open(t, path), open(t, path))
}
