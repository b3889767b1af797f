package postgres

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
)

// A claim's commit does not wait for the WAL flush, and only the claim's: the setting ends with
// its implicit transaction, so the next statement on the same connection (an insert, say) commits
// durably again.
func TestClaimAloneCommitsWithoutWaitingForTheFlush(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var inClaim, after string
	b := &pgx.Batch{}
	b.Queue(claimSettingsSQL)
	b.Queue("SELECT current_setting('synchronous_commit')").QueryRow(func(r pgx.Row) error { return r.Scan(&inClaim) })
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT current_setting('synchronous_commit')").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if inClaim != "off" {
		t.Errorf("synchronous_commit in a claim's transaction = %q, want off", inClaim)
	}
	if after == "off" {
		t.Errorf("synchronous_commit after a claim's transaction = %q: the claim's setting outlived it", after)
	}
}

// A claim that a crash of the server undid (its commit had not reached the disk) leaves the job
// as it was before; the job's next claim, made once the server is back, must hand out a fence
// that the lost claim's run does not hold, so that run's outcome is refused. The crash is
// played by putting the row back as it was before the claim.
func TestClaimUndoneByACrashGetsANewFence(t *testing.T) {
	clk := clockwork.NewFakeClockAt(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC))
	s := open(t, WithClock(clk))
	ctx := t.Context()
	id := mustInsert(t, s, job("k"))[0].Job.ID
	claim := func() *store.JobRow {
		t.Helper()
		rows, err := s.Claim(ctx, store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 1, Owner: "n1", LeaseFor: time.Minute})
		if err != nil || len(rows) != 1 {
			t.Fatalf("claim: %v, %d rows", err, len(rows))
		}
		return rows[0]
	}
	lost := claim()
	if _, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.jobs SET state = 'available', attempt = 0, fence = 0,
		owner = NULL, attempted_by = NULL, lease_until = NULL, attempted_at = NULL WHERE id = $1`), id); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second) // the server's restart
	next := claim()
	if next.Fence <= lost.Fence {
		t.Fatalf("the claim after the lost one has fence %d, the lost one had %d: want larger", next.Fence, lost.Fence)
	}
	applied, err := s.Complete(ctx, []store.Outcome{{ID: id, Fence: lost.Fence, State: store.StateCompleted}})
	if err != nil || applied[0] {
		t.Fatalf("the lost claim's outcome: applied %v, %v; want refused", applied, err)
	}
	applied, err = s.Complete(ctx, []store.Outcome{{ID: id, Fence: next.Fence, State: store.StateCompleted}})
	if err != nil || !applied[0] {
		t.Fatalf("the new claim's outcome: applied %v, %v; want applied", applied, err)
	}
}
