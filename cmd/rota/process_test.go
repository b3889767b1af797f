package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rotahq/rota"
)

// These tests run the real binary as separate processes, as a user and a process manager would:
// `rota serve` in one, `rota enqueue` in another, signals to stop.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	binDir    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// rotaBinary builds the command once per test run.
func rotaBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the rota binary")
	}
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "rota-bin-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "rota")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// serveProcess is a running `rota serve`.
type serveProcess struct {
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan error
}

func startServeProcess(t *testing.T, bin, store string, args ...string) *serveProcess {
	t.Helper()
	p := &serveProcess{log: &syncBuffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(bin, append([]string{"--store", store, "serve"}, args...)...)
	p.cmd.Env = append(os.Environ(), "ROTA_STORE=")
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	p.waitLog(t, "rota: serving", 30*time.Second)
	return p
}

// waitLog polls the log until it contains s.
func (p *serveProcess) waitLog(t *testing.T, s string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(p.log.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not log %q:\n%s", s, p.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *serveProcess) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// exited waits for the process to end within d and fails unless it exited 0.
func (p *serveProcess) exited(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("serve exited with %v:\n%s", err, p.log.String())
		}
	case <-time.After(d):
		t.Fatalf("serve still running %v after the signal:\n%s", d, p.log.String())
	}
}

// rotaCmd runs the binary to its end.
func rotaCmd(t *testing.T, bin, store string, args ...string) result {
	t.Helper()
	var stdout, stderr syncBuffer
	cmd := exec.Command(bin, append([]string{"--store", store}, args...)...)
	cmd.Env = append(os.Environ(), "ROTA_STORE=")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if err != nil {
		r.code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		}
	}
	return r
}

func TestProcessEnqueueWaitEchoHello(t *testing.T) {
	bin := rotaBinary(t)
	store := "sqlite:" + filepath.Join(t.TempDir(), "rota.db")
	serve := startServeProcess(t, bin, store)

	r := rotaCmd(t, bin, store, "enqueue", "exec", "--wait", "--timeout", "60s", "--", "echo", "hello").ok(t)
	if r.stdout != "hello\n" {
		t.Fatalf("stdout = %q, want %q; stderr %q", r.stdout, "hello\n", r.stderr)
	}

	serve.signal(t, syscall.SIGTERM)
	serve.exited(t, 30*time.Second)
	if log := serve.log.String(); !strings.Contains(log, "rota: stopped") {
		t.Fatalf("serve log does not end with its stop:\n%s", log)
	}
}

// A job still running when the drain timeout passes is cancelled and handed back, first in line,
// without using an attempt; the process still exits cleanly.
func TestProcessDrainTimeoutHandsBack(t *testing.T) {
	bin := rotaBinary(t)
	store := "sqlite:" + filepath.Join(t.TempDir(), "rota.db")
	serve := startServeProcess(t, bin, store, "--drain-timeout", "500ms")
	rotaCmd(t, bin, store, "enqueue", "exec", "--", "sleep", "60").ok(t)
	waitState(t, bin, store, 1, rota.StateRunning)

	serve.signal(t, syscall.SIGTERM)
	serve.exited(t, 20*time.Second)
	job := waitState(t, bin, store, 1, rota.StateAvailable)
	if job.Attempt != 0 || len(job.Errors) != 0 {
		t.Fatalf("handed-back job used an attempt: %+v", job)
	}
}

// A second signal does not wait for the drain timeout.
func TestProcessSecondSignalStopsAtOnce(t *testing.T) {
	bin := rotaBinary(t)
	store := "sqlite:" + filepath.Join(t.TempDir(), "rota.db")
	serve := startServeProcess(t, bin, store) // drain timeout: 25s
	rotaCmd(t, bin, store, "enqueue", "exec", "--", "sleep", "60").ok(t)
	waitState(t, bin, store, 1, rota.StateRunning)

	serve.signal(t, syscall.SIGINT)
	serve.waitLog(t, "signal again to cancel them", 10*time.Second)
	serve.signal(t, syscall.SIGINT)
	serve.exited(t, 15*time.Second)
	waitState(t, bin, store, 1, rota.StateAvailable)
}

// waitState polls `rota jobs show` until job id is in state.
func waitState(t *testing.T, bin, store string, id int64, state rota.State) rota.JobRow {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var job rota.JobRow
	for {
		r := rotaCmd(t, bin, store, "-o", "json", "jobs", "show", fmt.Sprint(id)).ok(t)
		if err := json.Unmarshal([]byte(r.stdout), &job); err != nil {
			t.Fatal(err)
		}
		if job.State == state {
			return job
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d is %s, want %s", id, job.State, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A node killed with SIGKILL takes its running program with it (on Linux), so the job's rescue
// does not leave two runs going at once.
func TestProcessKilledNodeKillsProgram(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux-only")
	}
	bin := rotaBinary(t)
	dir := t.TempDir()
	store := "sqlite:" + filepath.Join(dir, "rota.db")
	pidFile := filepath.Join(dir, "program.pid")
	serve := startServeProcess(t, bin, store)
	rotaCmd(t, bin, store, "enqueue", "exec", "--", "sh", "-c", `echo $$ > "$0"; exec sleep 60`, pidFile).ok(t)
	pid := waitForFile(t, pidFile)
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("program %d not running: %v", pid, err)
	}
	serve.signal(t, syscall.SIGKILL)
	<-serve.done
	deadline := time.Now().Add(10 * time.Second)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("program %d outlived its killed node", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitForFile polls for a pid a job's program writes.
func waitForFile(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processAlive reports whether pid runs; a zombie waiting for its reaper has ended.
func processAlive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
