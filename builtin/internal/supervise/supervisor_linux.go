package supervise

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

const (
	prSetChildSubreaper = 36 // prctl(2)
	pAll                = 0  // waitid(2): any child
)

// becomeSubreaper has the kernel give the supervisor, instead of init, every orphan among its
// descendants: a process whose parent died, even one that left the program's process group or
// session, becomes its child, where sweep finds it.
func becomeSubreaper() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return errno
	}
	return nil
}

// SelfExecutable is the running binary: /proc/self/exe names it even after an upgrade replaced or
// removed its file, so the supervisor is always of the node's own version.
func SelfExecutable() (string, error) {
	const self = "/proc/self/exe"
	if _, err := os.Stat(self); err == nil {
		return self, nil
	}
	return os.Executable()
}

// reap collects the children that have exited and reports the program's status once it has. The
// program is not reaped before its group is killed: until then it holds the group's id, so the
// signal reaches only what is left of the group, never a process that took the id since.
func (s *supervisor) reap() (syscall.WaitStatus, bool) {
	var status syscall.WaitStatus
	exited := false
	for {
		pid, ok := exitedChild()
		if !ok {
			return status, exited
		}
		if pid == s.pid {
			_ = syscall.Kill(-s.pid, syscall.SIGKILL)
		}
		ws, ok := waitNoHang(pid)
		if !ok {
			return status, exited
		}
		if pid == s.pid {
			status, exited = ws, true
		}
	}
}

// exitedChild returns a child that has exited, without reaping it (waitid with WNOWAIT). A
// process whose main thread ended while others run is not one yet.
func exitedChild() (int, bool) {
	var info [16]uint64 // a siginfo_t: 128 bytes, aligned for its pointers
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pAll, 0, uintptr(unsafe.Pointer(&info)),
			syscall.WEXITED|syscall.WNOHANG|syscall.WNOWAIT, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return 0, false
		}
		break
	}
	// si_pid opens the union after si_signo, si_errno and si_code, at a pointer's alignment. It
	// stays 0 when no child has exited.
	offset := max(12, 2*unsafe.Sizeof(uintptr(0)))
	pid := *(*int32)(unsafe.Add(unsafe.Pointer(&info), offset))
	return int(pid), pid > 0
}

// child is a child of the supervisor, from the process table.
type child struct {
	pid    int
	zombie bool
}

// children lists the supervisor's children by reading every process's parent in /proc.
func children() ([]child, error) {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var kids []child
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		state, ppid, err := procState(pid)
		if err == nil && ppid == self {
			kids = append(kids, child{pid: pid, zombie: state == 'Z'})
		}
	}
	return kids, nil
}

// procState reads a process's state and parent from /proc/PID/stat.
func procState(pid int) (state byte, ppid int, err error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// "PID (COMM) STATE PPID …": the command name may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	fields := bytes.Fields(stat[i+1:])
	if i < 0 || len(fields) < 2 || len(fields[0]) != 1 {
		return 0, 0, errors.New("unexpected /proc stat format")
	}
	ppid, err = strconv.Atoi(string(fields[1]))
	return fields[0][0], ppid, err
}
