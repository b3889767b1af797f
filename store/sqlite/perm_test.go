package sqlite_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rotahq/rota/store"
)

// Every file that holds jobs is the owner's alone, whatever the umask: the database, its WAL and
// its shared-memory index.
func TestFilesAreOwnersOnly(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "rota.db")
	s := open(t, path)
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
