//go:build unix

package builtin

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rotahq/rota/builtin/internal/supervise"
)

// runProgram runs p on the node's exec host (see execHost), which starts a new one if the last
// died.
func runProgram(ctx context.Context, p program, stdout, stderr io.Writer) (programEnd, error) {
	if err := ctx.Err(); err != nil {
		return programEnd{}, startError(p.name, err)
	}
	path, err := resolveProgram(p.name)
	if err != nil {
		return programEnd{}, startError(p.name, err)
	}
	h, err := currentHost()
	if err != nil {
		return programEnd{}, fmt.Errorf("start %s: %w", p.name, err)
	}
	return h.run(ctx, supervise.Spec{
		Path: path, Args: append([]string{p.name}, p.args...), Env: p.env, Dir: p.dir, KillGrace: KillGrace,
	}, stdout, stderr)
}

// resolveProgram finds the file a program name means as exec.Command does: a bare name through
// the node's PATH (not the program's), a path as it is, relative to the job's dir.
func resolveProgram(name string) (string, error) {
	if filepath.Base(name) != name {
		return name, nil
	}
	return exec.LookPath(name)
}

// run has the host run spec to its end: it relays the end of ctx as a stop, and returns how the
// program ended once the host has killed what was left of its process group. An error starting
// the program is classified as startError does.
func (h *execHost) run(ctx context.Context, spec supervise.Spec, stdout, stderr io.Writer) (programEnd, error) {
	name := spec.Args[0]
	out, err := newOutput(stdout, stderr)
	if err != nil {
		return programEnd{}, fmt.Errorf("start %s: %w", name, err)
	}
	id, events := h.register()
	defer h.unregister(id)
	err = h.send(supervise.Message{Op: supervise.OpStart, ID: id, Spec: &spec}, out.w[0], out.w[1])
	// The host holds the write ends now, or never will: the node's copies would keep the pipes
	// open after the program's end.
	out.closeWriters()
	if err != nil {
		out.wait()
		return programEnd{}, fmt.Errorf("start %s: send it to the exec host: %w", name, err)
	}

	var started supervise.Message
	select {
	case started = <-events:
	case <-h.gone:
		select {
		case started = <-events: // the host reported before its end
		default:
			out.wait()
			return programEnd{}, fmt.Errorf("start %s: %w before it started the program: %w", name, errHostGone, h.err)
		}
	}
	if started.Op != supervise.OpStarted {
		out.wait()
		if started.StartError == nil {
			return programEnd{}, fmt.Errorf("start %s: the exec host answered %q", name, started.Op)
		}
		return programEnd{}, startError(name, started.StartError.Err())
	}
	pid := started.PID

	end := programEnd{}
	var force <-chan time.Time
	done := ctx.Done()
	for {
		select {
		case m := <-events:
			return out.ended(name, end, m)
		case <-done:
			done, end.stopped = nil, true
			_ = h.send(supervise.Message{Op: supervise.OpStop, ID: id})
			// The host kills the program KillGrace after a stop. One that has not reported its
			// end soon after is stuck: the node kills the group itself, which the host has not
			// reaped, so its id is still the program's.
			t := time.NewTimer(KillGrace + time.Second)
			defer t.Stop()
			force = t.C
		case <-force:
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			out.wait()
			end.exitCode, end.state = -1, "signal: killed"
			return end, nil
		case <-h.gone:
			select {
			case m := <-events: // the host reported the end before its own
				return out.ended(name, end, m)
			default:
			}
			// The program died with its host (its parent-death signal); the rest of its group
			// may not have. Its id is free for reuse only once the group is empty, when the
			// signal finds no one.
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			out.wait()
			if end.stopped {
				end.exitCode, end.state = -1, "signal: killed"
				return end, nil
			}
			return programEnd{}, fmt.Errorf("program %s: %w while it ran, and it was killed: %w", name, errHostGone, h.err)
		}
	}
}

// ended completes end with the host's report of it, once the output has been read.
func (o *output) ended(name string, end programEnd, m supervise.Message) (programEnd, error) {
	waitErr := o.wait()
	if m.Op != supervise.OpExited || m.Exit == nil {
		return programEnd{}, fmt.Errorf("program %s: the exec host reported %q where the program's end was due", name, m.Op)
	}
	end.exitCode, end.state, end.waitErr = m.Exit.Code, m.Exit.State, waitErr
	return end, nil
}
