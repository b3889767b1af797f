//go:build linux

package builtin

import (
	"errors"
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

// startDescendants runs descendantsScript's program through the exec worker in the background
// and returns the two descendants once they are running, with the end of the run.
func startDescendants(t *testing.T, dir string) (grandchild, detached recorded, done <-chan error) {
	t.Helper()
	inGroup, outside := filepath.Join(dir, "grandchild"), filepath.Join(dir, "detached")
	ch := make(chan error, 1)
	go func() {
		res, err := newTestExec().run(t.Context(), ExecArgs{Program: "sh", Args: []string{"-c", descendantsScript, inGroup, outside, recordScript}})
		if err == nil && res.Stdout != "started\n" {
			err = errors.New("stdout " + strconv.Quote(res.Stdout))
		}
		ch <- err
	}()
	grandchild, detached = waitRecorded(t, inGroup), waitRecorded(t, outside)
	if grandchild.pgid == grandchild.pid {
		t.Fatalf("the grandchild %+v leads its own group: the test proves nothing", grandchild)
	}
	if detached.sid != detached.pid || detached.pgid != detached.pid {
		t.Fatalf("the detached process %+v did not leave the program's session and group: the test proves nothing", detached)
	}
	return grandchild, detached, ch
}

// reaped reports whether pid no longer exists, not even as a zombie: the supervisor has killed
// and collected it.
func reaped(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

// A program's descendants end with its run: an orphan left in its group, and one that left the
// group and the session with setsid. They are gone, and reaped, by the time the run returns.
func TestExecKillsDetachedDescendants(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid in PATH")
	}
	grandchild, detached, done := startDescendants(t, t.TempDir())
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not end after its program exited")
	}
	for name, p := range map[string]recorded{"grandchild": grandchild, "detached process": detached} {
		if !reaped(p.pid) {
			t.Errorf("the %s %d outlived the run", name, p.pid)
		}
	}
}

// When the life pipe ends, as it does however the node dies, the supervisor kills every process of
// the running program, detached ones included, and exits without a report.
func TestSupervisorKillsEverythingWhenNodeGoes(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid in PATH")
	}
	dir := t.TempDir()
	inGroup, outside := filepath.Join(dir, "grandchild"), filepath.Join(dir, "detached")
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh in PATH")
	}
	s, err := startSupervised(supervise.Spec{
		Path: sh, Args: []string{"sh", "-c", descendantsScript + "; exec sleep 60", inGroup, outside, recordScript},
		KillGrace: KillGrace, NodePID: os.Getpid(),
	}, newCapture(1024), newCapture(1024))
	if err != nil {
		t.Fatal(err)
	}
	grandchild, detached := waitRecorded(t, inGroup), waitRecorded(t, outside)
	if detached.sid != detached.pid {
		t.Fatalf("the detached process %+v did not leave the program's session", detached)
	}

	s.life.Close() // what the kernel does when the node dies
	waited := make(chan error, 1)
	go func() { waited <- s.cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(time.Second):
		t.Fatal("the supervisor still runs a second after its node's end")
	}
	defer s.status.Close()
	if r, err := s.final(); err == nil {
		t.Errorf("the supervisor reported %+v to a node that is gone", r)
	}
	for name, pid := range map[string]int{"program": s.pid, "grandchild": grandchild.pid, "detached process": detached.pid} {
		if !reaped(pid) {
			t.Errorf("the %s %d outlived its node", name, pid)
		}
	}
}
