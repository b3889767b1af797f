//go:build unix && !linux

package supervise

import (
	"errors"
	"os"
	"syscall"
)

// becomeSubreaper does nothing where the kernel has no subreapers: a process that leaves the
// program's group (setsid) and outlives its parent escapes the supervisor there.
func becomeSubreaper() error { return nil }

// SelfExecutable is the running binary, by the path it was started from.
func SelfExecutable() (string, error) { return os.Executable() }

// reap collects the program once it has exited and kills what is left of its group, as soon
// after as this system allows (it cannot wait for a child without reaping it): only the program
// is the supervisor's child here.
func (s *supervisor) reap() (syscall.WaitStatus, bool) {
	ws, ok := waitNoHang(s.pid)
	if ok {
		_ = syscall.Kill(-s.pid, syscall.SIGKILL)
	}
	return ws, ok
}

// child is a child of the supervisor.
type child struct {
	pid    int
	zombie bool
}

// children cannot be listed without /proc: sweep has nothing to do beyond the group's kill.
func children() ([]child, error) { return nil, errors.ErrUnsupported }
