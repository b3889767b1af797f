package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `rota serve` on a store it can read but not write says so at start and exits non-zero, instead
// of serving a node whose every claim and insert fails. The file belongs to someone else: as root
// the test runs serve as nobody, otherwise it takes its own write permission away.
func TestServeRefusesAStoreItCannotWrite(t *testing.T) {
	bin := rotaBinary(t)
	dir, err := os.MkdirTemp("", "rota-readonly-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	db := filepath.Join(dir, "rota.db")
	rotaCmd(t, bin, "sqlite:"+db, "migrate").ok(t)

	cmd := exec.Command(bin, "--store", "sqlite:"+db, "serve")
	cmd.Env = append(os.Environ(), "ROTA_STORE=")
	if os.Geteuid() == 0 {
		// nobody may read the file and write beside it (the WAL), but not write the file itself.
		for p, mode := range map[string]os.FileMode{dir: 0o777, filepath.Dir(bin): 0o755, db: 0o644} {
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	} else if err := os.Chmod(db, 0o444); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var out []byte
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("serve on a read-only store is still running after 30s:\n%s", out)
	}
	if err == nil {
		t.Fatalf("serve on a read-only store exited 0:\n%s", out)
	}
	if !strings.Contains(string(out), "cannot be written") || !strings.Contains(string(out), "readonly") {
		t.Fatalf("serve does not say why it cannot run:\n%s", out)
	}
}
