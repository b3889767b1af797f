package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"slices"
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
type ExecArgs struct {
	// Program is a name looked up in PATH or a path to an executable.
	Program string   `json:"program"`
	Args    []string `json:"args,omitempty"`
	// Env adds variables to the node's environment for this program.
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
	for k := range a.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("exec args: env name %q is not a valid variable name", k)
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
	allow     []string
	maxResult int
}

func newExecWorker(cfg Config) *execWorker {
	return &execWorker{allow: slices.Clone(cfg.AllowPrograms), maxResult: cfg.MaxResultBytes}
}

// Work runs the job's program and records its output as the result.
func (w *execWorker) Work(ctx context.Context, job *rota.Job[ExecArgs]) error {
	res, err := w.run(ctx, job.Args)
	if err != nil {
		return err
	}
	return job.SetResult(res)
}

// run runs a program to its end and returns its output. Errors that no retry can fix (a program
// that is not allowed, does not exist or cannot be executed) are wrapped in rota.Cancel.
func (w *execWorker) run(ctx context.Context, a ExecArgs) (*ExecResult, error) {
	if err := a.validate(); err != nil {
		return nil, rota.Cancel(err)
	}
	if !w.allowed(a.Program) {
		return nil, rota.Cancel(fmt.Errorf("program %q is not on this node's allow-list (%s)", a.Program, strings.Join(w.allow, ", ")))
	}
	timeout, _ := a.Timeout.orDefault(ExecTimeoutDefault)
	limit, _ := outputLimit(a.MaxOutputBytes)

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, a.Program, a.Args...)
	cmd.Dir = a.Dir
	cmd.Env = environ(a.Env)
	stdout, stderr := newCapture(limit), newCapture(limit)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	group := newProcessGroup(cmd)
	// A child that inherited the output pipes keeps them open after the program exits; stop
	// reading then instead of waiting for it.
	cmd.WaitDelay = KillGrace + time.Second

	if err := cmd.Start(); err != nil {
		return nil, startError(a.Program, err)
	}
	waitErr := cmd.Wait()
	// Whatever the program left running in its group dies with it, so a job cannot leak
	// processes. A program that means to leave a daemon behind detaches it (setsid).
	group.kill()

	res := &ExecResult{ExitCode: cmd.ProcessState.ExitCode()}
	switch {
	case group.stopped() && ctx.Err() != nil:
		// Cancelled by a user, or the node is stopping: the runtime tells which from ctx.
		return nil, fmt.Errorf("program %s stopped: %w", a.Program, context.Cause(ctx))
	case group.stopped():
		return nil, withTail(fmt.Errorf("program %s timed out after %v and was killed", a.Program, timeout), stderr)
	case res.ExitCode != 0:
		return nil, withTail(exitError(a.Program, cmd.ProcessState), stderr)
	case waitErr != nil && !errors.Is(waitErr, exec.ErrWaitDelay):
		return nil, fmt.Errorf("program %s: %w", a.Program, waitErr)
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

// allowed reports whether program may run under the allow-list.
func (w *execWorker) allowed(program string) bool {
	if len(w.allow) == 0 || slices.Contains(w.allow, program) {
		return true
	}
	resolved, err := exec.LookPath(program)
	if err != nil {
		return false
	}
	for _, p := range w.allow {
		if r, err := exec.LookPath(p); err == nil && r == resolved {
			return true
		}
	}
	return false
}

// environ returns the node's environment with extra added, overriding variables of the same name.
func environ(extra map[string]string) []string {
	env := os.Environ()
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+extra[k])
	}
	return env
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

func exitError(program string, ps *os.ProcessState) error {
	if ps.ExitCode() == -1 {
		return fmt.Errorf("program %s was killed: %s", program, ps)
	}
	return fmt.Errorf("program %s exited with code %d", program, ps.ExitCode())
}

// withTail adds the end of stderr to err, where a person reading the job's errors looks first.
func withTail(err error, stderr *capture) error {
	if t := stderr.Tail(); t != "" {
		return fmt.Errorf("%w; stderr: %s", err, t)
	}
	return err
}
