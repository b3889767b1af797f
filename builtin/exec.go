package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strings"
	"time"

	"github.com/rotahq/rota"
)

// Defaults of the exec kind.
const (
	// ExecTimeoutDefault bounds a program whose job names no timeout.
	ExecTimeoutDefault = time.Minute
	// KillGrace is how long a program has between SIGTERM and SIGKILL when its job times out, is
	// cancelled or its node stops. It stays well below the node's grace for handlers
	// (rota.TimeoutGraceDefault), so the job is recorded, not abandoned.
	KillGrace = 3 * time.Second
)

// ExecArgs are the args of an exec job: run Program with Args, directly, not through a shell.
//
// Every process the program starts ends with its node if the node dies first, so a rescued job
// never runs beside what is left of its last attempt; and what stays in the program's process
// group ends with the run. On Linux that includes a process that detached itself (setsid, a
// double fork), though not always with the run: the node's programs share one exec host
// (rota-exec-supervisor in ps), which cannot tell whose such a process was, and kills it when it
// next runs no program, or with the node. Elsewhere a detached process escapes. A daemon meant
// to outlive its job has to be started by a service manager (systemd-run, systemctl start),
// which runs it outside the job.
type ExecArgs struct {
	// Program is a name looked up in PATH or a path to an executable.
	Program string   `json:"program"`
	Args    []string `json:"args,omitempty"`
	// Env adds variables to the program's environment, which otherwise holds only the node's
	// variables named by ExecBaseEnv and Config.PassEnv. Under Config.AllowPrograms, only the
	// names in Config.AllowEnv may be set.
	Env map[string]string `json:"env,omitempty"`
	// Dir is the working directory. Defaults to the node's.
	Dir string `json:"dir,omitempty"`
	// Timeout bounds the run. Defaults to ExecTimeoutDefault.
	Timeout Duration `json:"timeout,omitzero"`
	// MaxOutputBytes is how much of each of stdout and stderr is kept. Defaults to
	// OutputBytesDefault; at most OutputBytesMax.
	MaxOutputBytes int `json:"max_output_bytes,omitempty"`
}

// Kind returns "exec".
func (ExecArgs) Kind() string { return KindExec }

// UnmarshalJSON refuses unknown fields.
func (a *ExecArgs) UnmarshalJSON(b []byte) error {
	type plain ExecArgs
	return decodeStrict(b, (*plain)(a))
}

func (a *ExecArgs) validate() error {
	if a.Program == "" {
		return errors.New("exec args: program is empty")
	}
	if _, err := a.Timeout.orDefault(ExecTimeoutDefault); err != nil {
		return fmt.Errorf("exec args: %w", err)
	}
	if _, err := outputLimit(a.MaxOutputBytes); err != nil {
		return fmt.Errorf("exec args: max_output_bytes: %w", err)
	}
	for k, v := range a.Env {
		if err := checkEnvName(k); err != nil {
			return fmt.Errorf("exec args: env name %w", err)
		}
		if strings.ContainsRune(v, 0) {
			return fmt.Errorf("exec args: env %s: the value holds a NUL byte, which no environment can", k)
		}
	}
	return nil
}

// ExecResult is the result of an exec job. A run that exits non-zero fails its attempt instead;
// its error carries the exit code and the end of stderr.
type ExecResult struct {
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	// Truncated says that stdout or stderr was longer than what was kept.
	Truncated bool `json:"truncated"`
}

type execWorker struct {
	policy    execPolicy
	maxResult int
}

func newExecWorker(cfg Config) *execWorker {
	return &execWorker{policy: newExecPolicy(cfg), maxResult: cfg.MaxResultBytes}
}

// Work runs the job's program and records its output as the result.
func (w *execWorker) Work(ctx context.Context, job *rota.Job[ExecArgs]) error {
	res, err := w.runAs(ctx, job.Args, jobEnv(job.JobRow))
	if err != nil {
		return err
	}
	return job.SetResult(res)
}

// program is what runProgram starts: a program name as the job gives it (resolved by
// runProgram), its arguments without the name, its whole environment and its working directory.
type program struct {
	name string
	args []string
	env  []string
	dir  string
}

// programEnd is how a program that started ended.
type programEnd struct {
	// exitCode is -1 when a signal ended the program.
	exitCode int
	// state says how it ended as os.ProcessState.String does: "exit status 3", "signal: killed".
	state string
	// stopped says that the program was stopped because the context of its run ended.
	stopped bool
	// waitErr is what went wrong collecting its output (exec.ErrWaitDelay: a process that
	// inherited the output kept it open), if anything did.
	waitErr error
}

// run runs a program to its end and returns its output. Errors that no retry can fix (a program
// that is not allowed, does not exist or cannot be executed) are wrapped in rota.Cancel.
func (w *execWorker) run(ctx context.Context, a ExecArgs) (*ExecResult, error) {
	return w.runAs(ctx, a, nil)
}

// runAs is run with identity, the job's variables (jobEnv), added to the program's environment.
func (w *execWorker) runAs(ctx context.Context, a ExecArgs, identity []string) (*ExecResult, error) {
	if err := w.policy.check(a); err != nil {
		return nil, rota.Cancel(err)
	}
	timeout, _ := a.Timeout.orDefault(ExecTimeoutDefault)
	limit, _ := outputLimit(a.MaxOutputBytes)

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stdout, stderr := newCapture(limit), newCapture(limit)
	p := program{name: a.Program, args: a.Args, env: withIdentity(w.policy.environ(a.Env), identity), dir: a.Dir}
	end, err := runProgram(runCtx, p, stdout, stderr)
	if err != nil {
		return nil, err
	}

	res := &ExecResult{ExitCode: end.exitCode}
	switch {
	case end.stopped && ctx.Err() != nil:
		// Cancelled by a user, or the node is stopping: the runtime tells which from ctx.
		return nil, fmt.Errorf("program %s stopped: %w", a.Program, context.Cause(ctx))
	case end.stopped:
		return nil, withTail(fmt.Errorf("program %s timed out after %v and was killed", a.Program, timeout), stdout, stderr)
	case end.exitCode != 0:
		return nil, withTail(exitError(a.Program, end), stdout, stderr)
	case end.waitErr != nil && !errors.Is(end.waitErr, exec.ErrWaitDelay):
		return nil, fmt.Errorf("program %s: %w", a.Program, end.waitErr)
	}
	w.fit(res, stdout, stderr)
	return res, nil
}

// fit fills the result's output, trimming it until the encoded result is within the limit:
// output of control characters can grow six-fold when escaped as JSON.
func (w *execWorker) fit(res *ExecResult, stdout, stderr *capture) {
	for {
		res.Stdout, res.Stderr = stdout.String(), stderr.String()
		res.Truncated = stdout.Truncated() || stderr.Truncated()
		if encodedSize(res) <= w.maxResult || (res.Stdout == "" && res.Stderr == "") {
			return
		}
		stdout.shrink()
		stderr.shrink()
	}
}

// startError classifies a program that could not start: missing or not executable is
// permanent; anything else (out of file descriptors, say) may pass.
func startError(program string, err error) error {
	err = fmt.Errorf("start %s: %w", program, err)
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return rota.Cancel(err)
	}
	return err
}

func exitError(program string, end programEnd) error {
	if end.exitCode == -1 {
		return fmt.Errorf("program %s was killed: %s", program, end.state)
	}
	return fmt.Errorf("program %s exited with code %d", program, end.exitCode)
}

// withTail adds the end of stderr to err, where a person reading the job's errors looks first.
func withTail(err error, stdout, stderr *capture) error {
	if t := stderr.Tail(); t != "" {
		err = fmt.Errorf("%w; stderr: %s", err, t)
	}
	return &outputError{err: err, stdout: stdout.Tail(), stderr: stderr.Tail()}
}

// outputError is a failed program's error with the end of what it printed, which the attempt
// keeps (rota.Detailer): the message has only stderr's tail, and the result, where output goes
// when a program succeeds, is not recorded for a failed attempt.
type outputError struct {
	err            error
	stdout, stderr string
}

func (e *outputError) Error() string { return e.err.Error() }
func (e *outputError) Unwrap() error { return e.err }

func (e *outputError) ErrorDetails() string {
	return "stdout:\n" + orNone(e.stdout) + "\n\nstderr:\n" + orNone(e.stderr)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
