package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

// The writer leaves checkpoints to the checkpointer, which copies the whole WAL into the
// file after the store's commits.
func TestCheckpointerCopiesTheWAL(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
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

// Under writes that never pause, the checkpointer's passes never copy the whole WAL; the writer
// finishes one once the WAL holds walResetFrames, and the WAL starts again, cut back to that
// length: the file stays near it however much is written.
func TestWALStaysBoundedUnderLoad(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "rota.db")
	const frames = 500 // 2 MB of 4 KiB pages; the writes below make about 10 MB of WAL
	s, err := Open(ctx, path, func(c *config) { c.walResetFrames, c.checkpointInterval = frames, time.Millisecond })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ps := make([]store.InsertParams, 100)
	for i := range ps {
		ps[i] = store.InsertParams{Kind: "k", Queue: "default", Args: []byte(`{"n":1}`), MaxAttempts: 3}
	}
	var written int64
	for range 100 {
		if _, err := s.Insert(ctx, ps); err != nil {
			t.Fatal(err)
		}
		rows, err := s.Claim(ctx, store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 100, Owner: "n", LeaseFor: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		outs := make([]store.Outcome, len(rows))
		for i, r := range rows {
			outs[i] = store.Outcome{ID: r.ID, Fence: r.Fence, State: store.StateCompleted}
		}
		if _, err := s.Complete(ctx, outs); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path + "-wal"); err == nil {
			written = max(written, fi.Size())
		}
	}
	if limit := int64(frames * 4096); written > 2*limit {
		t.Errorf("the WAL file reached %.1f MB; want it near %.1f MB", float64(written)/1e6, float64(limit)/1e6)
	}
}
