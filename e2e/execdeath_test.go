package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The job of the node-death test: a shell that starts another shell, which writes its pid and
// then appends the date to a log ten times a second, for ever. The outer shell has a command
// after the inner one, so it cannot exec into it: the looping shell is a grandchild of the
// program, out of reach of a death signal that only the program gets. $0 is the inner script,
// $1 the pid file, $2 the log.
const (
	execDeathOuter = `sh -c "$0" "$1" "$2"; exit 1`
	execDeathInner = `echo $$ > "$0"; while :; do date >> "$1"; sleep 0.1; done`
)

// execDeathMark names the variable the job sets, so the test can find every process of the
// job, down to each `sleep` and `date`, by its environment.
const execDeathMark = "EXECDEATH_MARK"

// A node killed with SIGKILL takes every process of its exec jobs with it, within a second:
// children and grandchildren alike. Otherwise the job, rescued and run again elsewhere, would run
// twice at once, the old run still writing beside the new one.
func TestExecNodeSIGKILLKillsJobProcesses(t *testing.T) {
	needBinary(t)
	if runtime.GOOS != "linux" {
		t.Skip("finds the job's processes through /proc")
	}
	dir := t.TempDir()
	store := "sqlite:" + filepath.Join(dir, "rota.db")
	pidFile, logFile := filepath.Join(dir, "loop.pid"), filepath.Join(dir, "loop.log")
	mark := execDeathMark + "=" + dir
	// On failure the loop would go on after the test: end whatever is left of it.
	t.Cleanup(func() {
		for _, pid := range markedProcesses(mark) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	n := startSQLiteNode(t, store, "execdeath")
	env, _ := json.Marshal(map[string]any{"env": map[string]string{execDeathMark: dir}})
	rotaOn(t, store, "enqueue", "exec", "--args", string(env), "--",
		"sh", "-c", execDeathOuter, execDeathInner, pidFile, logFile)

	loop := waitPIDFile(t, pidFile, 30*time.Second)
	if !eventually(10*time.Second, pollEvery, func() bool { return lineCount(logFile) >= 2 }) {
		t.Fatalf("the job's loop (pid %d) is not writing to its log", loop)
	}
	if parent := parentPID(loop); parent == n.cmd.Process.Pid || !hasEnv(parent, mark) {
		t.Fatalf("looping shell %d has parent %d; want a process of the job, not the node %d", loop, parent, n.cmd.Process.Pid)
	}
	before := markedProcesses(mark)
	if len(before) < 2 {
		t.Fatalf("found %d processes of the job (%v), want at least its two shells", len(before), before)
	}
	// The node's children run the job too, whatever their environment: a supervisor's is not
	// the job's.
	kids := childrenOf(n.cmd.Process.Pid)
	if len(kids) == 0 {
		t.Fatalf("node %d has no child running the job", n.cmd.Process.Pid)
	}

	n.kill(t)
	var left []int
	gone := eventually(time.Until(n.killedAt.Add(time.Second)), 10*time.Millisecond, func() bool {
		left = markedProcesses(mark)
		for _, pid := range kids {
			if alive(pid) {
				left = append(left, pid)
			}
		}
		return len(left) == 0
	})
	if !gone {
		t.Fatalf("processes %v of the job still run a second after their node was killed (it had %v, and children %v)", left, before, kids)
	}
	if alive(loop) {
		t.Fatalf("looping shell %d outlived its node", loop)
	}
	t.Logf("the job's %d processes and the node's %d children were gone %v after the SIGKILL", len(before), len(kids), time.Since(n.killedAt).Round(time.Millisecond))
	// Nothing of the job is left, so nothing can write: watching the log for three of the loop's
	// periods shows that no process the scan missed (one outside /proc's view) still appends.
	size := fileSize(logFile)
	time.Sleep(300 * time.Millisecond)
	if after := fileSize(logFile); after != size {
		t.Fatalf("the job's log grew from %d to %d bytes after every process of the job had gone", size, after)
	}
}

// startSQLiteNode runs `rota serve` on a SQLite store, waits until it serves, and kills it when the
// test ends.
func startSQLiteNode(t *testing.T, store, id string) *node {
	t.Helper()
	n := &node{id: id, out: &logBuffer{}, done: make(chan struct{})}
	n.cmd = exec.Command(rotaBin, "--store", store, "serve", "--node-id", id, "--log-format", "json")
	n.cmd.Env = append(os.Environ(), "ROTA_STORE=")
	n.cmd.Stdout, n.cmd.Stderr = n.out, n.out
	n.cmd.WaitDelay = 5 * time.Second
	setDeathSignal(n.cmd)
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("start node %s: %v", id, err)
	}
	go func() {
		n.err = n.cmd.Wait()
		close(n.done)
	}()
	t.Cleanup(n.cleanup)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node %s's log:\n%s", id, n.out.String())
		}
	})
	n.waitLog(t, "rota: serving", 30*time.Second)
	return n
}

// rotaOn runs the binary to its end on store, failing the test if it fails.
func rotaOn(t *testing.T, store string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, rotaBin, append([]string{"--store", store}, args...)...)
	cmd.Env = append(os.Environ(), "ROTA_STORE=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rota %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// waitPIDFile polls for the pid a job's program writes.
func waitPIDFile(t *testing.T, path string, within time.Duration) int {
	t.Helper()
	var pid int
	if !eventually(within, pollEvery, func() bool {
		b, err := os.ReadFile(path)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	}) {
		t.Fatalf("no pid in %s after %v", path, within)
	}
	return pid
}

// markedProcesses lists the running processes whose environment holds mark (NAME=VALUE).
func markedProcesses(mark string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && alive(pid) && hasEnv(pid, mark) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// childrenOf lists the running children of pid.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var kids []int
	for _, e := range entries {
		kid, err := strconv.Atoi(e.Name())
		if err == nil && alive(kid) && parentPID(kid) == pid {
			kids = append(kids, kid)
		}
	}
	return kids
}

// hasEnv reports whether process pid's environment holds mark.
func hasEnv(pid int, mark string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	return err == nil && bytes.Contains(append([]byte{0}, b...), []byte("\x00"+mark+"\x00"))
}

// procStat returns the fields of /proc/PID/stat after the command name: state, ppid, ….
func procStat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// alive reports whether pid runs; a zombie waiting for its reaper has ended.
func alive(pid int) bool {
	f := procStat(pid)
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// parentPID returns the parent of pid, or 0 if it is gone.
func parentPID(pid int) int {
	f := procStat(pid)
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

func lineCount(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}
