//go:build unix

package builtin

import (
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"
)

// processGroup runs a program in its own process group, so stopping the job stops everything the
// program started (a shell's children, a build's compilers), not just the program.
type processGroup struct {
	cmd     *exec.Cmd
	signals atomic.Bool
	timer   atomic.Pointer[time.Timer]
}

// newProcessGroup sets cmd up to start a new process group and to stop the whole group, first
// with SIGTERM, then SIGKILL after KillGrace, when cmd's context ends.
func newProcessGroup(cmd *exec.Cmd) *processGroup {
	g := &processGroup{cmd: cmd}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
	cmd.Cancel = func() error {
		g.signals.Store(true)
		pgid := cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		g.timer.Store(time.AfterFunc(KillGrace, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }))
		return nil
	}
	return g
}

// stopped reports whether the group was signalled because the context ended.
func (g *processGroup) stopped() bool { return g.signals.Load() }

// kill ends whatever is left of the group once the program has exited. The group id is the
// program's pid, which the system does not reuse while any member of the group lives; once none
// does, the signal finds no one.
func (g *processGroup) kill() {
	if t := g.timer.Load(); t != nil {
		t.Stop()
	}
	if g.cmd.Process != nil {
		_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
	}
}
