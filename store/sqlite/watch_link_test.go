package sqlite

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rotahq/rota/store"
)

// The watcher listens for writes to walPath(path). Opened through a symbolic link, SQLite puts
// the WAL beside the file the link names, so that is the file that must be watched.
func TestWatchedWALIsTheOneSQLiteWrites(t *testing.T) {
	real := filepath.Join(t.TempDir(), "rota.db")
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), link, WithLogger(discard))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Insert(t.Context(), []store.InsertParams{{Kind: "k", Queue: "q", Args: []byte(`{}`), MaxAttempts: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(walPath(link)); err != nil {
		t.Fatalf("the watcher watches %s, which SQLite does not write: %v", walPath(link), err)
	}
}
