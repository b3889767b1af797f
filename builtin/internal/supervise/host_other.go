//go:build unix && !linux

package supervise

import (
	"errors"
	"os"
	"syscall"
)

// recvFlags is 0 where the kernel cannot close received descriptors on exec from their arrival:
// the socket's reader does it just after (socket.take).
const recvFlags = 0

// becomeSubreaper does nothing where the kernel has no subreapers: a process that leaves its
// program's group (setsid) and outlives its parent escapes the host there.
func becomeSubreaper() error { return nil }

// SelfExecutable is the running binary, by the path it was started from.
func SelfExecutable() (string, error) { return os.Executable() }

// reap collects the programs that have exited and kills what is left of their groups, as soon
// after as this system allows (it cannot wait for a child without reaping it): only the
// programs are the host's children here.
func (h *host) reap() {
	for pid, r := range h.programs {
		if ws, ok := waitNoHang(pid); ok {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			h.exited(r, ws)
		}
	}
}

// children cannot be listed without /proc: the host knows its programs only.
func children() ([]int, error) { return nil, errors.ErrUnsupported }
