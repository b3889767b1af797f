//go:build !unix

package builtin

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"time"
)

// runProgram runs p as the node's own child where there is no supervisor: a program's children
// may outlive it, and the node.
func runProgram(ctx context.Context, p program, stdout, stderr io.Writer) (programEnd, error) {
	cmd := exec.CommandContext(ctx, p.name, p.args...)
	cmd.Dir, cmd.Env = p.dir, p.env
	cmd.Stdout, cmd.Stderr = stdout, stderr
	group := newProcessGroup(cmd)
	// A child that inherited the output pipes keeps them open after the program exits; stop
	// reading then instead of waiting for it.
	cmd.WaitDelay = KillGrace + time.Second
	if err := cmd.Start(); err != nil {
		return programEnd{}, startError(p.name, err)
	}
	waitErr := cmd.Wait()
	group.kill()
	end := programEnd{exitCode: cmd.ProcessState.ExitCode(), state: cmd.ProcessState.String(), stopped: group.stopped()}
	if ee := (*exec.ExitError)(nil); !errors.As(waitErr, &ee) {
		end.waitErr = waitErr
	}
	return end, nil
}
