//go:build linux

package builtin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rotahq/rota/builtin/internal/supervise"
)

// recordScript, run by sh with a file as $0, writes "PID PGID SID" of its shell to the file (in
// one rename, so a reader never sees half of it) and then sleeps as that same process.
const recordScript = `read -r pid _ _ _ pgid sid _ < /proc/self/stat; echo "$pid $pgid $sid" > "$0.tmp"; mv "$0.tmp" "$0"; exec sleep 60`

// descendantsScript, run by sh with $0 and $1 files and $2 recordScript, starts two descendants
// that sleep: a grandchild, through a subshell that exits at once, so it is an orphan in the
// program's group; and a process that left the group and the session (setsid). It waits until
// both have recorded themselves.
const descendantsScript = `( sh -c "$2" "$0" & )
setsid sh -c "$2" "$1" &
while [ ! -s "$0" ] || [ ! -s "$1" ]; do sleep 0.01; done
echo started`

// recorded is what recordScript wrote.
type recorded struct{ pid, pgid, sid int }

// waitRecorded polls for the file recordScript writes, with a bound.
func waitRecorded(t *testing.T, path string) recorded {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(path)
		var ids []int
		for _, f := range strings.Fields(string(b)) {
			if id, err := strconv.Atoi(f); err == nil {
				ids = append(ids, id)
			}
		}
		if err == nil && len(ids) == 3 {
			return recorded{ids[0], ids[1], ids[2]}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("nothing recorded in %s", path)
	return recorded{}
}

// reaped reports whether pid no longer exists, not even as a zombie: the host has killed and
// collected it.
func reaped(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

// waitReaped waits a bounded time for pid to be reaped: a SIGKILL is delivered, and its zombie
// collected, just after the kill returns.
func waitReaped(pid int) bool {
	deadline := time.Now().Add(2 * time.Second)
	for !reaped(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// newTestHost starts an exec host of the test's own, which no other test's program shares, and
// ends it with the test.
func newTestHost(t *testing.T) *execHost {
	t.Helper()
	h, err := startExecHost()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.conn.Close()
		<-h.gone
	})
	return h
}

// shSpec is sh -c script with args, as runProgram would send it.
func shSpec(t *testing.T, script string, args ...string) supervise.Spec {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh in PATH")
	}
	return supervise.Spec{Path: sh, Args: append([]string{"sh", "-c", script}, args...), KillGrace: KillGrace}
}

// A program's descendants end with its run when the host runs no other program: an orphan left in
// its group, and one that left the group and the session (setsid).
func TestExecKillsDescendantsOfEndedJob(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid in PATH")
	}
	h := newTestHost(t)
	dir := t.TempDir()
	inGroup, outside := filepath.Join(dir, "grandchild"), filepath.Join(dir, "detached")
	stdout := newCapture(1024)
	end, err := h.run(t.Context(), shSpec(t, descendantsScript, inGroup, outside, recordScript), stdout, newCapture(1024))
	if err != nil || end.exitCode != 0 || stdout.String() != "started\n" {
		t.Fatalf("end = %+v, err = %v, stdout %q", end, err, stdout.String())
	}
	grandchild, detached := waitRecorded(t, inGroup), waitRecorded(t, outside)
	if grandchild.pgid == grandchild.pid {
		t.Fatalf("the grandchild %+v leads its own group: the test proves nothing", grandchild)
	}
	if detached.sid != detached.pid || detached.pgid != detached.pid {
		t.Fatalf("the detached process %+v did not leave the program's session and group: the test proves nothing", detached)
	}
	for name, p := range map[string]recorded{"grandchild": grandchild, "detached process": detached} {
		if !waitReaped(p.pid) {
			t.Errorf("the %s %d outlived the run", name, p.pid)
		}
	}
}

// exitedState reports whether pid has been killed, or died, and awaits its reaping.
func exitedState(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// While another program runs, a program's end kills what is left of its group, but not a process
// that left the group (setsid), which the host cannot tell from the other program's own: that one
// is killed once the host runs no program.
func TestExecKillsGroupAtEndAndDetachedWhenIdle(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid in PATH")
	}
	h := newTestHost(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	other := make(chan programEnd, 1)
	go func() {
		end, _ := h.run(ctx, shSpec(t, "exec sleep 60"), newCapture(1024), newCapture(1024))
		other <- end
	}()
	inGroup, outside := filepath.Join(dir, "grandchild"), filepath.Join(dir, "detached")
	// Without its output: the detached process would keep it open, and the run would wait for
	// its end (exec.ErrWaitDelay).
	if _, err := h.run(t.Context(), shSpec(t, "exec >/dev/null 2>&1; "+descendantsScript, inGroup, outside, recordScript), newCapture(1024), newCapture(1024)); err != nil {
		t.Fatal(err)
	}
	grandchild, detached := waitRecorded(t, inGroup), waitRecorded(t, outside)
	if grandchild.pgid == grandchild.pid || detached.sid != detached.pid {
		t.Fatalf("grandchild %+v, detached %+v: not one in the group and one out of it, the test proves nothing", grandchild, detached)
	}
	if !waitReaped(grandchild.pid) {
		t.Errorf("the grandchild %d in the program's group outlived the run", grandchild.pid)
	}
	if reaped(detached.pid) || exitedState(detached.pid) {
		t.Fatalf("the detached process %d was killed while another program ran", detached.pid)
	}
	cancel()
	if end := <-other; !end.stopped {
		t.Errorf("the other program ended with %+v, not stopped", end)
	}
	if !waitReaped(detached.pid) {
		t.Errorf("the detached process %d outlived the last program", detached.pid)
	}
}

// When the socket ends, as it does however the node dies, the host kills every process of the
// running programs, detached ones included, and exits within a second.
func TestExecHostKillsEverythingWhenNodeGoes(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid in PATH")
	}
	h := newTestHost(t)
	dir := t.TempDir()
	inGroup, outside := filepath.Join(dir, "grandchild"), filepath.Join(dir, "detached")
	ran := make(chan error, 1)
	go func() {
		_, err := h.run(t.Context(), shSpec(t, descendantsScript+"; exec sleep 60", inGroup, outside, recordScript), newCapture(1024), newCapture(1024))
		ran <- err
	}()
	grandchild, detached := waitRecorded(t, inGroup), waitRecorded(t, outside)
	if detached.sid != detached.pid {
		t.Fatalf("the detached process %+v did not leave the program's session", detached)
	}
	program := grandchild.pgid

	h.conn.Close() // what the kernel does when the node dies
	select {
	case <-h.gone:
	case <-time.After(time.Second):
		t.Fatal("the host still runs a second after its node's end")
	}
	for name, pid := range map[string]int{"program": program, "grandchild": grandchild.pid, "detached process": detached.pid} {
		if !reaped(pid) {
			t.Errorf("the %s %d outlived its node", name, pid)
		}
	}
	if err := <-ran; err == nil || !errors.Is(err, errHostGone) {
		t.Errorf("run error = %v, want the host's end", err)
	}
}

// A host that dies while its node lives (the OOM killer) fails the running jobs' attempts with an
// error to retry, takes their programs with it, and the next job starts a new host.
func TestExecHostDeathFailsRunningJobAndRestarts(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "program.pid")
	done := make(chan error, 1)
	go func() {
		_, err := newTestExec().run(t.Context(), ExecArgs{Program: "sh", Args: []string{"-c", `echo $$ > "$0"; exec sleep 60`, pidFile}})
		done <- err
	}()
	program := waitForPID(t, pidFile)
	hosts.mu.Lock()
	dead := hosts.cur
	hosts.mu.Unlock()
	if err := dead.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || isPermanent(err) || !strings.Contains(err.Error(), "exec host ended") {
			t.Fatalf("error = %v, want a retryable error naming the host's end", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not end after its host died")
	}
	if !waitReaped(program) {
		t.Errorf("the program %d outlived its host", program)
	}
	res, err := newTestExec().run(t.Context(), ExecArgs{Program: "echo", Args: []string{"again"}})
	if err != nil || res.Stdout != "again\n" {
		t.Fatalf("after the host's death: res = %+v, err = %v", res, err)
	}
	hosts.mu.Lock()
	defer hosts.mu.Unlock()
	if hosts.cur == dead {
		t.Error("the dead host was used again")
	}
}

// One host runs many programs at once, each with its own output.
func TestExecHostRunsJobsConcurrently(t *testing.T) {
	const n = 40
	errs := make(chan error, n)
	for i := range n {
		go func() {
			want := strconv.Itoa(i)
			res, err := newTestExec().run(t.Context(), ExecArgs{Program: "sh", Args: []string{"-c", `sleep 0.05; echo "$0"; echo "$0" >&2`, want}})
			if err == nil && (res.Stdout != want+"\n" || res.Stderr != want+"\n") {
				err = fmt.Errorf("job %s: stdout %q, stderr %q", want, res.Stdout, res.Stderr)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// A start larger than a socket buffer (a megabyte of args) reaches the host whole.
func TestExecHostLargeStart(t *testing.T) {
	args := []string{"-c", `printf %s "$@" | wc -c`, "sh"}
	for range 8 {
		args = append(args, strings.Repeat("x", 120<<10))
	}
	res, err := newTestExec().run(t.Context(), ExecArgs{Program: "sh", Args: args})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(res.Stdout); got != strconv.Itoa(8*120<<10) {
		t.Fatalf("the program got %s bytes of args, want %d", got, 8*120<<10)
	}
}
