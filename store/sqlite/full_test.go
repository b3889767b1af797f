package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rotahq/rota/store"
)

// A write refused for want of space says so with store.ErrUnavailable (callers answer 503, not
// 500), loses none of the jobs already stored, and the store takes writes again once there is
// room. max_page_count caps the file the way a full disk does: SQLITE_FULL.
func TestFullDatabaseIsUnavailableNotLost(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, WithLogger(discard))
	insert := func(n int) error {
		args, _ := json.Marshal(map[string]string{"pad": strings.Repeat("x", n)})
		_, err := s.Insert(ctx, []store.InsertParams{{Kind: "k", Queue: "q", Args: args, MaxAttempts: 1}})
		return err
	}
	if err := insert(10); err != nil {
		t.Fatal(err)
	}
	capPages(t, s, 0)
	err := insert(256 << 10)
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "full") {
		t.Fatalf("insert into a full database: %v, want store.ErrUnavailable saying it is full", err)
	}
	stats, err := s.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := stats[0].Counts[store.StateAvailable]; len(stats) != 1 || got != 1 {
		t.Fatalf("after the refused insert: %+v, want the one job stored before", stats)
	}
	capPages(t, s, 1<<20)
	if err := insert(256 << 10); err != nil {
		t.Fatalf("insert once there is room again: %v", err)
	}
}

// capPages lets the database grow by extra pages at most (max_page_count), as a disk with that
// much room left would.
func capPages(t *testing.T, s *Store, extra int) {
	t.Helper()
	if err := s.write(context.Background(), func(t *wtx) error {
		var pages int
		if err := t.w.conn.QueryRowContext(stmtCtx, "PRAGMA page_count").Scan(&pages); err != nil {
			return err
		}
		_, err := t.exec(fmt.Sprintf("PRAGMA max_page_count = %d", pages+extra))
		return err
	}); err != nil {
		t.Fatalf("set max_page_count: %v", err)
	}
}

// A full disk met by one request of a group fails that request alone; its neighbours commit,
// and every caller's answer says what happened to its jobs.
func TestFullDiskFailsOnlyTheRequestThatMetIt(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, WithLogger(discard))
	mk := func(q string, n int) []store.InsertParams {
		args, _ := json.Marshal(map[string]string{"pad": strings.Repeat("x", n)})
		return []store.InsertParams{{Kind: "k", Queue: q, Args: args, MaxAttempts: 1, UniqueKey: q}}
	}
	capPages(t, s, 20)
	release := holdWriter(t, s)
	errs := make([]chan error, 3)
	sizes := []int{10, 1 << 20, 10}
	for i := range errs {
		errs[i] = make(chan error, 1)
		go func() {
			_, err := s.Insert(ctx, mk(fmt.Sprintf("q%d", i), sizes[i]))
			errs[i] <- err
		}()
		waitQueued(s, i+1)
	}
	release()
	got := []error{<-errs[0], <-errs[1], <-errs[2]}
	for i, err := range got {
		var rows int
		if qerr := s.db.QueryRow(`SELECT count(*) FROM jobs WHERE queue = ?`, fmt.Sprintf("q%d", i)).Scan(&rows); qerr != nil {
			t.Fatal(qerr)
		}
		if (err == nil) != (rows == 1) {
			t.Errorf("request %d: answer %v but %d rows stored", i, err, rows)
		}
		if i == 1 && !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("big insert: %v, want ErrUnavailable", err)
		}
		if i != 1 && err != nil {
			t.Errorf("small insert %d failed with its neighbour: %v", i, err)
		}
	}
}
