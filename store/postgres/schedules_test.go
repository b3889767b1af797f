package postgres

import (
	"testing"
	"time"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/storetest"
)

// Two Stores with pools of their own are two nodes: the schedule's row lock, taken by the
// compare-and-set, lets one planner of a round win.
func TestPlanRaceTwoStores(t *testing.T) {
	schema := newSchema(t)
	storetest.PlanRace(t, openSchema(t, schema, WithAutoMigrate()), openSchema(t, schema))
}

// A claim that commits while DeleteSchedule waits for its occurrence's row: the occurrence has
// started and stays running, as the contract says (only jobs not started are cancelled). The
// delete must check the state of the row it updates, not of the one its subquery read: a chaos
// run lost a running cron job this way, removed as the schedule was deleted.
func TestDeleteScheduleSparesAnOccurrenceClaimedMeanwhile(t *testing.T) {
	ctx := t.Context()
	s := open(t)
	sc := store.Schedule{Name: "tick", Expr: "* * * * * *", Zone: "UTC", Kind: "k", Queue: "default",
		Args: []byte(`{}`), MaxAttempts: 1, Missed: store.MissedSkip}
	if _, err := s.UpsertSchedule(ctx, sc); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	occ := job("k")
	occ.RunAt, occ.Schedule = now, "tick"
	if planned, err := s.PlanSchedule(ctx, "tick", time.Time{}, now, []store.InsertParams{occ}); err != nil || !planned {
		t.Fatalf("PlanSchedule = %v, %v", planned, err)
	}
	var id int64
	if err := s.pool.QueryRow(ctx, s.sql(`SELECT id FROM {schema}.jobs WHERE schedule = 'tick'`)).Scan(&id); err != nil {
		t.Fatal(err)
	}
	// A claim of the occurrence, caught between its row lock and its commit.
	tx, claimPID := openTx(t, s)
	if _, err := tx.Exec(ctx, s.sql(`UPDATE {schema}.jobs SET state = 'running', attempt = attempt + 1,
		fence = fence + 1, owner = 'n', attempted_by = 'n', attempted_at = now(), lease_until = now() + interval '1 minute'
		WHERE id = $1 AND state = 'available'`), id); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.DeleteSchedule(ctx, "tick") }()
	waitBlockedBy(t, s, claimPID, "DeleteSchedule")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, id); got.State != store.StateRunning || got.Attempt != 1 {
		t.Fatalf("occurrence claimed while the schedule was deleted: %s after %d attempts (errors %v), want running",
			got.State, got.Attempt, got.Errors)
	}
}
