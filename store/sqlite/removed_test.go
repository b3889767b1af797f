package sqlite_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

// The database file removed under a running store (rm rota.db, a deploy that replaces it): an
// insert after it either says the store is unavailable or is readable by the next process that
// opens the path: SQLite would go on writing into the unlinked file, gone at Close.
func TestRemovedFileIsUnavailableNotLost(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "rota.db")
	s, err := sqlite.Open(ctx, path, sqlite.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Insert(ctx, []store.InsertParams{job()}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	res, err := s.Insert(ctx, []store.InsertParams{job()})
	if cerr := s.Close(); cerr != nil {
		t.Logf("close: %v", cerr)
	}
	if err != nil {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("insert after removal: %v, want store.ErrUnavailable", err)
		}
		return
	}
	s2 := open(t, path)
	if _, gerr := s2.Get(ctx, res[0].Job.ID); gerr != nil {
		t.Fatalf("insert after the file was removed returned job %d with no error, but it is gone: %v", res[0].Job.ID, gerr)
	}
}
