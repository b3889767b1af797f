package sqlite_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rotahq/rota/store"
)

// A path that is a symbolic link to a database not created yet (a data directory prepared by a
// deploy, /var/lib/app/rota.db -> /data/rota.db): the file rota creates must be the owner's
// alone, as it is without the link.
func TestFileCreatedThroughLinkIsOwnersOnly(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	real := filepath.Join(t.TempDir(), "rota.db")
	link := filepath.Join(t.TempDir(), "rota.db")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	s := open(t, link)
	if _, err := s.Insert(t.Context(), []store.InsertParams{{Kind: "k", Queue: "q", Args: json.RawMessage(`{"token":"secret"}`), MaxAttempts: 1}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{real, real + "-wal", real + "-shm"} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatalf("stat: %v", err)
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s has mode %v, want -rw-------", filepath.Base(name), perm)
		}
	}
}
