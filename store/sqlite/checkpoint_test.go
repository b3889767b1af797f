package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

// The writer leaves checkpoints to the checkpointer, which copies the whole WAL into the
// file after the store's commits.
func TestCheckpointerCopiesTheWAL(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "rota.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var auto int
	if err := s.w.conn.QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&auto); err != nil || auto != 0 {
		t.Fatalf("the writer's wal_autocheckpoint = %d, %v; want 0", auto, err)
	}
	type result struct{ log, done int }
	ran := make(chan result, 16)
	hook := func(log, done int, err error) {
		if err == nil {
			select {
			case ran <- result{log, done}:
			default:
			}
		}
	}
	s.cp.ran.Store(&hook)
	ps := make([]store.InsertParams, 500)
	for i := range ps {
		ps[i] = store.InsertParams{Kind: "k", Queue: "default", Args: []byte(`{"n":1}`), MaxAttempts: 3}
	}
	for range 4 {
		if _, err := s.Insert(ctx, ps); err != nil {
			t.Fatal(err)
		}
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case r := <-ran:
			if r.log > 0 && r.done == r.log {
				return
			}
		case <-timeout:
			t.Fatal("no checkpoint copied the whole WAL after the inserts")
		}
	}
}
