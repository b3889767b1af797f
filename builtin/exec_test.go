package builtin

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota"
)

func newTestExec(allow ...string) *execWorker {
	return newExecWorker(Config{AllowPrograms: allow, MaxResultBytes: rota.MaxResultBytesDefault})
}

// isPermanent tells a rota.Cancel error (no retry) from an ordinary failed attempt.
func isPermanent(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "cancelled: ") }

func TestExecCapturesOutput(t *testing.T) {
	res, err := newTestExec().run(t.Context(), ExecArgs{Program: "sh", Args: []string{"-c", "echo out; echo err >&2"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.Stdout != "out\n" || res.Stderr != "err\n" || res.Truncated {
		t.Fatalf("result = %+v", res)
	}
}

// Arguments reach the program as they are: no shell expands or splits them.
func TestExecPassesArgsWithoutShell(t *testing.T) {
	args := []string{"$HOME", "a;b", "*", "two words"}
	res, err := newTestExec().run(t.Context(), ExecArgs{Program: "echo", Args: args})
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(args, " ") + "\n"; res.Stdout != want {
		t.Fatalf("stdout = %q, want %q", res.Stdout, want)
	}
}

func TestExecEnvAndDir(t *testing.T) {
	dir := t.TempDir()
	res, err := newTestExec().run(t.Context(), ExecArgs{
		Program: "sh", Args: []string{"-c", `echo "$ROTA_TEST_VAR"; pwd`},
		Env: map[string]string{"ROTA_TEST_VAR": "from the job"}, Dir: dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if want := "from the job\n" + real + "\n"; res.Stdout != want {
		t.Fatalf("stdout = %q, want %q", res.Stdout, want)
	}
}

func TestExecNonZeroExitFailsAttempt(t *testing.T) {
	_, err := newTestExec().run(t.Context(), ExecArgs{Program: "sh", Args: []string{"-c", "echo first >&2; echo 'disk full' >&2; exit 3"}})
	if err == nil {
		t.Fatal("want an error for exit code 3")
	}
	if isPermanent(err) {
		t.Fatalf("a non-zero exit must be retried, got permanent error %v", err)
	}
	for _, want := range []string{"exited with code 3", "disk full", "first"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestExecStderrTailIsTheEnd(t *testing.T) {
	_, err := newTestExec().run(t.Context(), ExecArgs{Program: "sh", Args: []string{"-c", "head -c 100000 /dev/zero | tr '\\0' x >&2; echo THE-END >&2; exit 1"}})
	if err == nil || !strings.Contains(err.Error(), "THE-END") || !strings.Contains(err.Error(), "…") {
		t.Fatalf("error = %.200q…, want the marked end of stderr", err)
	}
	if len(err.Error()) > 2*tailBytes {
		t.Fatalf("error is %d bytes; the tail must be bounded", len(err.Error()))
	}
}

func TestExecTruncatesHugeOutput(t *testing.T) {
	res, err := newTestExec().run(t.Context(), ExecArgs{Program: "sh", Args: []string{"-c", "yes | head -c 5000000"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stdout) != OutputBytesDefault || !res.Truncated {
		t.Fatalf("stdout is %d bytes, truncated=%v; want %d and true", len(res.Stdout), res.Truncated, OutputBytesDefault)
	}
	res, err = newTestExec().run(t.Context(), ExecArgs{Program: "sh", Args: []string{"-c", "yes | head -c 5000"}, MaxOutputBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != strings.Repeat("y\n", 50) || !res.Truncated {
		t.Fatalf("stdout = %q, truncated=%v", res.Stdout, res.Truncated)
	}
}

// Output that grows when escaped as JSON is trimmed so the result still fits the job's limit.
func TestExecResultFitsLimit(t *testing.T) {
	w := newTestExec()
	res, err := w.run(t.Context(), ExecArgs{Program: "head", Args: []string{"-c", "300000", "/dev/zero"}, MaxOutputBytes: OutputBytesMax})
	if err != nil {
		t.Fatal(err)
	}
	if size := encodedSize(res); size > rota.MaxResultBytesDefault || !res.Truncated || len(res.Stdout) == 0 {
		t.Fatalf("result encodes to %d bytes (limit %d), truncated=%v, stdout %d bytes", size, rota.MaxResultBytesDefault, res.Truncated, len(res.Stdout))
	}
}

func TestExecTimeout(t *testing.T) {
	start := time.Now()
	_, err := newTestExec().run(t.Context(), ExecArgs{Program: "sleep", Args: []string{"30"}, Timeout: Duration(200 * time.Millisecond)})
	if err == nil || !strings.Contains(err.Error(), "timed out after 200ms") {
		t.Fatalf("error = %v, want a timeout", err)
	}
	if isPermanent(err) {
		t.Fatalf("a timeout must be retried, got %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("run took %v after a 200ms timeout", d)
	}
}

// Cancelling the job's context kills the program and what it started, and the error carries the
// context's cause so the runtime can tell a user's cancel from a shutdown.
func TestExecCancelKillsProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	ctx, cancel := context.WithCancelCause(t.Context())
	cause := errors.New("test cancelled the job")
	done := make(chan error, 1)
	go func() {
		_, err := newTestExec().run(ctx, ExecArgs{Program: "sh", Args: []string{"-c", `sleep 60 & echo $! > "$0"; wait`, pidFile}})
		done <- err
	}()
	child := waitForPID(t, pidFile)
	cancel(cause)
	select {
	case err := <-done:
		if !errors.Is(err, cause) {
			t.Fatalf("error = %v, want it to wrap the cancel cause", err)
		}
	case <-time.After(KillGrace + 5*time.Second):
		t.Fatal("run did not return after its context was cancelled")
	}
	waitGone(t, child)
}

// A program that ignores SIGTERM is killed with SIGKILL after KillGrace.
func TestExecKillsProgramIgnoringTerm(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	done := make(chan error, 1)
	go func() {
		_, err := newTestExec().run(t.Context(), ExecArgs{
			Program: "sh", Args: []string{"-c", `trap "" TERM; sleep 60 & echo $! > "$0"; wait; wait`, pidFile},
			Timeout: Duration(300 * time.Millisecond),
		})
		done <- err
	}()
	child := waitForPID(t, pidFile)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "timed out") {
			t.Fatalf("error = %v, want a timeout", err)
		}
	case <-time.After(KillGrace + 10*time.Second):
		t.Fatal("run did not return: the group was not killed")
	}
	waitGone(t, child)
}

// A background process left behind by a program that exited is killed with it.
func TestExecKillsLeftovers(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	res, err := newTestExec().run(t.Context(), ExecArgs{Program: "sh", Args: []string{"-c", `sleep 60 >/dev/null 2>&1 & echo $! > "$0"; echo done`, pidFile}})
	if err != nil || res.Stdout != "done\n" {
		t.Fatalf("res = %+v, err = %v", res, err)
	}
	waitGone(t, waitForPID(t, pidFile))
}

func TestExecAllowList(t *testing.T) {
	echoPath, err := exec.LookPath("echo")
	if err != nil {
		t.Skip("no echo in PATH")
	}
	w := newTestExec("echo")
	if _, err := w.run(t.Context(), ExecArgs{Program: "echo", Args: []string{"hi"}}); err != nil {
		t.Fatalf("echo is allowed: %v", err)
	}
	if _, err := w.run(t.Context(), ExecArgs{Program: echoPath, Args: []string{"hi"}}); err != nil {
		t.Fatalf("%s is echo, allowed: %v", echoPath, err)
	}
	_, err = w.run(t.Context(), ExecArgs{Program: "sh", Args: []string{"-c", "echo pwned"}})
	if !isPermanent(err) || !strings.Contains(err.Error(), `program "sh" is not on this node's allow-list (echo)`) {
		t.Fatalf("error = %v, want a permanent allow-list refusal", err)
	}
}

// A relative program with a slash runs relative to the job's dir: an allow-list entry of the
// same string allows it only where it names the same file, never in another dir a job names.
func TestExecAllowListRelativeProgram(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "backup.sh"), []byte("#!/bin/sh\necho pwned\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := newTestExec("scripts/backup.sh").run(t.Context(), ExecArgs{Program: "scripts/backup.sh", Dir: dir})
	if !isPermanent(err) || !strings.Contains(err.Error(), "not on this node's allow-list") {
		t.Fatalf("scripts/backup.sh under a dir the job named: error = %v, want an allow-list refusal", err)
	}
	res, err := newTestExec(filepath.Join(dir, "scripts", "backup.sh")).run(t.Context(), ExecArgs{Program: "scripts/backup.sh", Dir: dir})
	if err != nil || res.Stdout != "pwned\n" {
		t.Fatalf("the allowed file, named relative to the job's dir: %+v, %v", res, err)
	}
}

func TestExecMissingProgramIsPermanent(t *testing.T) {
	_, err := newTestExec().run(t.Context(), ExecArgs{Program: "rota-no-such-program"})
	if !isPermanent(err) || !strings.Contains(err.Error(), "rota-no-such-program") {
		t.Fatalf("error = %v, want a permanent not-found error", err)
	}
	_, err = newTestExec().run(t.Context(), ExecArgs{Program: "echo", Dir: filepath.Join(t.TempDir(), "missing")})
	if !isPermanent(err) {
		t.Fatalf("error = %v, want a permanent error for a missing directory", err)
	}
}

// A program killed by a signal is reported as it would be without the supervisor between it
// and the node: which signal, and as a failed attempt to retry.
func TestExecReportsSignal(t *testing.T) {
	for sig, want := range map[string]string{"KILL": "killed", "TERM": "terminated", "SEGV": "segmentation fault"} {
		_, err := newTestExec().run(t.Context(), ExecArgs{Program: "sh", Args: []string{"-c", "echo dying >&2; kill -" + sig + " $$"}})
		if err == nil || isPermanent(err) || !strings.Contains(err.Error(), "program sh was killed: signal: "+want) || !strings.Contains(err.Error(), "dying") {
			t.Errorf("SIG%s: error = %v, want a retryable \"was killed: signal: %s\" with the stderr tail", sig, err, want)
		}
	}
}

// A program that cannot start for good (no permission to execute it) ends at once; one that might
// start another time (an exec format error, as from a half-written file) is retried. The cause
// crosses from the supervisor to the node intact.
func TestExecStartErrors(t *testing.T) {
	dir := t.TempDir()
	notExecutable := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(notExecutable, []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := newTestExec().run(t.Context(), ExecArgs{Program: notExecutable})
	if !isPermanent(err) || !strings.Contains(err.Error(), "permission denied") || !strings.Contains(err.Error(), "start "+notExecutable) {
		t.Errorf("not executable: error = %v, want a permanent permission error", err)
	}
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("\x00\x01\x02 not a program"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = newTestExec().run(t.Context(), ExecArgs{Program: garbage})
	if err == nil || isPermanent(err) || !strings.Contains(err.Error(), "exec format error") {
		t.Errorf("exec format error: error = %v, want a retryable start error", err)
	}
}

func TestExecArgsValidation(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{`{"program":"echo","arg":["x"]}`, `unknown field "arg"`},
		{`{"args":["x"]}`, "program is empty"},
		{`{"program":"echo","timeout":"-5s"}`, "negative"},
		{`{"program":"echo","timeout":"soon"}`, "timeout"},
		{`{"program":"echo","max_output_bytes":10000000}`, "over the maximum"},
		{`{"program":"echo","env":{"A=B":"x"}}`, "not a valid variable name"},
		{`{"program":"echo","env":{"A":"x\u0000y"}}`, "NUL"},
	} {
		err := Validate(KindExec, []byte(tc.args))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%s) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	if err := Validate(KindExec, []byte(`{"program":"echo","args":["hi"],"timeout":30}`)); err != nil {
		t.Errorf("valid args rejected: %v", err)
	}
	if err := Validate("not-built-in", []byte(`{"anything":1}`)); err != nil {
		t.Errorf("other kinds are not checked: %v", err)
	}
}

// waitForPID polls for the pid a test program writes, with a bound.
func waitForPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 {
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

// waitGone polls until pid has exited (a zombie waiting for its reaper counts as exited).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		// The state follows the command name in parentheses.
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d is still running", pid)
}
