package supervise

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"unsafe"
)

const (
	prSetChildSubreaper = 36 // prctl(2)
	pAll                = 0  // waitid(2): any child
	// recvFlags closes each descriptor the host receives on exec, from its arrival: a
	// program starting at that moment must not inherit another's output.
	recvFlags = syscall.MSG_CMSG_CLOEXEC
)

// becomeSubreaper has the kernel give the host, instead of init, every orphan among its
// descendants: a process whose parent died, even one that left its program's process group or
// session, becomes its child, where killOrphans and sweep find it.
func becomeSubreaper() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return errno
	}
	return nil
}

// SelfExecutable is the running binary: /proc/self/exe names it even after an upgrade replaced or
// removed its file, so the host is always of the node's own version.
func SelfExecutable() (string, error) {
	const self = "/proc/self/exe"
	if _, err := os.Stat(self); err == nil {
		return self, nil
	}
	return os.Executable()
}

// reap collects the children that have exited and reports each program's end. A program is not
// reaped before its group is killed: until then it holds the group's id, so the signal reaches
// only what is left of the group, never a process that took the id since. Other children,
// orphans, are reaped in silence.
func (h *host) reap() {
	for {
		pid, ok := exitedChild()
		if !ok {
			return
		}
		r := h.programs[pid]
		if r != nil {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		ws, ok := waitNoHang(pid)
		if !ok {
			return
		}
		if r != nil {
			h.exited(r, ws)
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

// children lists the host's children: from each of its threads' children files where the
// kernel has them, which costs a few reads, else by every process's parent in /proc.
func children() ([]int, error) {
	if kids, err := threadChildren(); err == nil {
		return kids, nil
	}
	return scanChildren()
}

func threadChildren() ([]int, error) {
	files, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil || len(files) == 0 {
		return nil, errors.New("no /proc/self/task/*/children")
	}
	var kids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // a thread that ended
			}
			return nil, err
		}
		for _, field := range bytes.Fields(b) {
			if pid, err := strconv.Atoi(string(field)); err == nil {
				kids = append(kids, pid)
			}
		}
	}
	return kids, nil
}

func scanChildren() ([]int, error) {
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
	var kids []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if ppid, err := parentOf(pid); err == nil && ppid == self {
			kids = append(kids, pid)
		}
	}
	return kids, nil
}

// parentOf reads a process's parent from /proc/PID/stat.
func parentOf(pid int) (int, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// "PID (COMM) STATE PPID …": the command name may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("unexpected /proc stat format")
	}
	fields := bytes.Fields(stat[i+1:])
	if len(fields) < 2 {
		return 0, errors.New("unexpected /proc stat format")
	}
	return strconv.Atoi(string(fields[1]))
}
