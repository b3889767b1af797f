//go:build !unix

package builtin

import (
	"os/exec"
	"sync/atomic"
)

// processGroup stops only the program itself where process groups do not exist.
type processGroup struct{ signals atomic.Bool }

func newProcessGroup(cmd *exec.Cmd) *processGroup {
	g := &processGroup{}
	cmd.Cancel = func() error {
		g.signals.Store(true)
		return cmd.Process.Kill()
	}
	return g
}

func (g *processGroup) stopped() bool { return g.signals.Load() }

func (g *processGroup) kill() {}
