package e2e

import (
	"os/exec"
	"syscall"
)

// setDeathSignal has the kernel kill a node if the test process dies without cleaning up (a test
// timeout's panic, a ^C), so no `rota serve` outlives its test run.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
