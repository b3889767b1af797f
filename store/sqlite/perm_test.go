package sqlite_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

// Every file that holds jobs is the owner's alone, whatever the umask: the database, its WAL and
// its shared-memory index.
func TestFilesAreOwnersOnly(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "rota.db")
	wantOwnersOnly(t, open(t, path), path)
}

// A path that is a symbolic link to a database not created yet (a data directory prepared by a
// deploy, /var/lib/app/rota.db -> /data/rota.db): the files rota creates are the owner's alone,
// as they are without the link.
func TestFileCreatedThroughLinkIsOwnersOnly(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	real := filepath.Join(t.TempDir(), "rota.db")
	link := filepath.Join(t.TempDir(), "rota.db")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	wantOwnersOnly(t, open(t, link), real)
}

// wantOwnersOnly inserts a job into s and checks that the database at path, its WAL and its
// shared-memory index are -rw-------.
func wantOwnersOnly(t *testing.T, s *sqlite.Store, path string) {
	t.Helper()
	if _, err := s.Insert(context.Background(), []store.InsertParams{{Kind: "k", Queue: "q", Args: json.RawMessage(`{"token":"secret"}`), MaxAttempts: 1}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatalf("stat: %v", err)
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s has mode %v, want -rw-------", filepath.Base(name), perm)
		}
	}
}
