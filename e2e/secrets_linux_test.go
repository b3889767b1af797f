//go:build linux

package e2e

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Exec jobs run as the node's user, and the node's environment holds its secrets: ROTA_STORE,
// which may carry a database password, and ROTA_API_TOKEN. No other process of that user, a
// job's program among them, may read them through /proc. The node and the reader run as one
// user other than root (nobody, when the test runs as root, which reads everything).
func TestNodeEnvironmentIsHiddenFromItsUsersProcesses(t *testing.T) {
	needBinary(t)
	dir, err := os.MkdirTemp("", "rota-e2e-secrets-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil { // the node's user writes its store here
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "rota")
	copyFile(t, rotaBin, bin, 0o755)
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	const secret = "the-node's-secret-4f7a"
	n := &node{id: "secrets", out: &logBuffer{}, done: make(chan struct{})}
	n.cmd = exec.Command(bin, "serve", "--node-id", n.id, "--log-format", "json")
	n.cmd.Env = []string{"ROTA_STORE=sqlite:" + filepath.Join(dir, "rota.db"), "ROTA_API_TOKEN=" + secret, "HOME=" + dir}
	n.cmd.Stdout, n.cmd.Stderr = n.out, n.out
	n.cmd.WaitDelay = 5 * time.Second
	setDeathSignal(n.cmd)
	n.cmd.SysProcAttr.Credential = cred
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("start node: %v", err)
	}
	go func() {
		n.err = n.cmd.Wait()
		close(n.done)
	}()
	t.Cleanup(n.cleanup)
	n.waitLog(t, "rota: serving", 30*time.Second)

	environ := filepath.Join("/proc", strconv.Itoa(n.cmd.Process.Pid), "environ")
	read := exec.Command("cat", environ)
	read.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := read.CombinedOutput()
	if strings.Contains(string(out), secret) {
		t.Fatalf("a process of the node's user read the node's environment, secret and all, from %s", environ)
	}
	if err == nil {
		t.Fatalf("a process of the node's user read %s (%d bytes); want it refused", environ, len(out))
	}
	t.Logf("reading %s as the node's user: %v: %s", environ, err, strings.TrimSpace(string(out)))
}

// copyFile copies from to to, with mode.
func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
