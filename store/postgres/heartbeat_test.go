package postgres

import (
	"context"
	"testing"
	"time"
)

// A heartbeat must not wait for rows another transaction holds: the node's own batched completion
// locks the rows it finishes in its own order, and a heartbeat that waited on them deadlocked with
// it. Here a transaction holds one running job's row while the heartbeat runs.
func TestHeartbeatSkipsRowsBeingCompleted(t *testing.T) {
	s := open(t)
	mustInsert(t, s, job("k"), job("k"))
	claimed := claimAll(t, s, "default")
	if len(claimed) != 2 {
		t.Fatalf("claimed %d", len(claimed))
	}
	tx, err := s.Pool().Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(t.Context(), "SELECT 1 FROM "+s.Schema()+".jobs WHERE id = $1 FOR UPDATE", claimed[0].ID); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := s.Heartbeat(ctx, "n", time.Hour); err != nil {
		t.Fatalf("heartbeat while a row is held: %v", err)
	}
	got, err := s.Get(t.Context(), claimed[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.LeaseUntil.Sub(claimed[1].LeaseUntil) < 30*time.Minute {
		t.Fatalf("the free job's lease was not extended: %v → %v", claimed[1].LeaseUntil, got.LeaseUntil)
	}
}
