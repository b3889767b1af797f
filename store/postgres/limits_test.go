package postgres

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/storetest"
)

// Limits are in the database: another Store on the schema enforces them, starts recorded before
// included.
func TestLimitsSurviveReopen(t *testing.T) {
	ctx := t.Context()
	schema := newSchema(t)
	limits := []store.Limit{
		{Scope: store.LimitKind, Name: "k", Rate: 1, Period: time.Hour},
		{Scope: store.LimitQueue, Name: "default", MaxRunning: 1},
	}
	s := openSchema(t, schema, WithAutoMigrate())
	for _, l := range limits {
		if err := s.SetLimit(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	mustInsert(t, s, job("k"), job("k"))
	claim := store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 10, Owner: "n", LeaseFor: time.Minute}
	first, err := s.Claim(ctx, claim)
	if err != nil || len(first) != 1 {
		t.Fatalf("Claim = %d jobs, %v; want 1", len(first), err)
	}
	s.Close()

	again := openSchema(t, schema)
	got, err := again.ListLimits(ctx)
	if err != nil || !slices.Equal(got, limits) {
		t.Fatalf("ListLimits on a new Store = %+v, %v; want %+v", got, err, limits)
	}
	done := store.Outcome{ID: first[0].ID, Fence: first[0].Fence, State: store.StateCompleted}
	if _, err := again.Complete(ctx, []store.Outcome{done}); err != nil {
		t.Fatal(err)
	}
	// MaxRunning has room again, but the start under the first Store still fills the hour's rate.
	if rows, err := again.Claim(ctx, claim); err != nil || len(rows) != 0 {
		t.Fatalf("Claim on a new Store = %d jobs, %v; want none", len(rows), err)
	}
}

// Two Stores with pools of their own are two nodes: the limit's row lock keeps the limit.
func TestLimitRaceTwoStores(t *testing.T) {
	schema := newSchema(t)
	storetest.LimitRace(t, openSchema(t, schema, WithAutoMigrate()), openSchema(t, schema))
}

// Claims no limit applies to never wait for a limit's lock: while a transaction holds every limit
// row, a claim of an unlimited queue goes ahead.
func TestUnlimitedClaimsIgnoreLimitLocks(t *testing.T) {
	ctx := t.Context()
	s := open(t)
	if err := s.SetLimit(ctx, store.Limit{Scope: store.LimitQueue, Name: "limited", MaxRunning: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetLimit(ctx, store.Limit{Scope: store.LimitKind, Name: "other", MaxRunning: 1}); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, s, job("k"))
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, s.sql(`SELECT 1 FROM {schema}.limits FOR UPDATE`)); err != nil {
		t.Fatal(err)
	}
	// A claim that waited for the lock would wait for the transaction, which ends after it.
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	claim := store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 10, Owner: "n", LeaseFor: time.Minute}
	rows, err := s.Claim(short, claim)
	if err != nil || len(rows) != 1 {
		t.Fatalf("Claim = %d jobs, %v; want 1 at once", len(rows), err)
	}
}
