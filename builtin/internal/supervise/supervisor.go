//go:build unix

package supervise

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// init turns the process into an exec supervisor when a node started it as one (see
// startSupervised), and exits when the supervisor is done. The node runs its own binary again:
// no other file to install or keep in step, and any Go program that imports this package,
// `rota serve` or a service that embeds a node, supervises the same way.
func init() {
	if version, ok := os.LookupEnv(Env); ok {
		os.Exit(supervise(version))
	}
}

// DeathSignal is what the kernel sends a supervisor when its node dies (on Linux): a
// second way to learn it besides the life pipe's end, and catchable, unlike SIGKILL, so the
// supervisor can take its program's processes with it.
const DeathSignal = syscall.SIGUSR1

// supervisor runs one program for a node. It is the program's parent and, on Linux, the subreaper
// of everything the program starts: a process whose parent dies comes to it, even one that left
// the program's process group, so none can be lost. It kills them all when the program ends and
// when the node does.
type supervisor struct {
	spec   Spec
	status *json.Encoder
	// pid is the program's, and its process group's id.
	pid  int
	chld chan os.Signal
	sigs chan os.Signal
	// stops receives the node's requests to stop; gone is closed when the life pipe ends.
	stops chan struct{}
	gone  chan struct{}
}

// supervise runs the supervisor and returns its exit code.
func supervise(version string) int {
	_ = os.Unsetenv(Env)
	// The pipes must not reach the program: the life pipe would outlive the node in it.
	syscall.CloseOnExec(LifeFD)
	syscall.CloseOnExec(StatusFD)
	life := os.NewFile(LifeFD, "rota-exec-life")
	s := &supervisor{
		status: json.NewEncoder(os.NewFile(StatusFD, "rota-exec-status")),
		chld:   make(chan os.Signal, 1),
		sigs:   make(chan os.Signal, 4),
		stops:  make(chan struct{}, 1),
		gone:   make(chan struct{}),
	}
	if version != Version {
		return s.fail(fmt.Errorf("exec supervisor speaks version %s, its node %s", Version, version))
	}
	// Before anything can exit or signal, so that nothing is missed.
	signal.Notify(s.chld, syscall.SIGCHLD)
	signal.Notify(s.sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, DeathSignal)
	// Where the kernel will not have it (an old one, a sandbox), the program's group is still
	// killed; only what leaves the group escapes, as outside Linux.
	_ = becomeSubreaper()

	requests := json.NewDecoder(life)
	if err := requests.Decode(&s.spec); err != nil {
		return s.fail(fmt.Errorf("exec supervisor: read the program from the node: %w", err))
	}
	if err := s.start(); err != nil {
		s.report(Report{StartError: NewStartFailure(err)})
		return 127
	}
	s.report(Report{PID: s.pid})
	go s.listen(requests)
	ws, ok := s.watch()
	if !ok {
		return 1
	}
	s.report(Report{Exit: newExitReport(ws)})
	return exitCode(ws)
}

// start starts the program in a process group of its own, with the environment the node chose.
// Its standard output and error are the supervisor's: the node's pipes.
func (s *supervisor) start() error {
	env := s.spec.Env
	if env == nil {
		env = []string{} // nil would mean the supervisor's own
	}
	// With SysProcAttr set, os.StartProcess no longer checks the directory first, and a missing
	// one reads as a missing program ("fork/exec /usr/bin/echo: no such file or directory").
	if s.spec.Dir != "" {
		if _, err := os.Stat(s.spec.Dir); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				pe.Op = "chdir"
			}
			return err
		}
	}
	cmd := &exec.Cmd{
		Path: s.spec.Path, Args: s.spec.Args, Env: env, Dir: s.spec.Dir,
		Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	// If the supervisor is killed, the program dies with it. This code runs in init, on the
	// main thread, which lives as long as the process: the signal means the supervisor's end.
	SetParentDeathSignal(cmd.SysProcAttr, syscall.SIGKILL)
	if err := cmd.Start(); err != nil {
		return err
	}
	// The supervisor reaps its children itself (reap), so it never calls cmd.Wait.
	s.pid = cmd.Process.Pid
	return nil
}

// listen reads the node's requests until the life pipe ends.
func (s *supervisor) listen(requests *json.Decoder) {
	for {
		var r Request
		if err := requests.Decode(&r); err != nil {
			close(s.gone)
			return
		}
		if r.Stop {
			select {
			case s.stops <- struct{}{}:
			default:
			}
		}
	}
}

// watch runs until the program has exited and what it left is gone, and returns its status; or
// until the node is gone, having killed every process of the program, and returns false.
func (s *supervisor) watch() (syscall.WaitStatus, bool) {
	var kill <-chan time.Time
	stop := func() {
		if kill == nil {
			_ = syscall.Kill(-s.pid, syscall.SIGTERM)
			kill = time.After(s.spec.KillGrace)
		}
	}
	for {
		select {
		case <-s.chld:
			if ws, exited := s.reap(); exited {
				s.sweep()
				return ws, true
			}
		case <-s.stops:
			stop()
		case <-kill:
			_ = syscall.Kill(-s.pid, syscall.SIGKILL)
		case sig := <-s.sigs:
			switch {
			case sig != DeathSignal:
				// Someone asked the supervisor itself to end: it ends the program first, as the
				// node would, rather than leave it to run.
				stop()
			case os.Getppid() != s.spec.NodePID:
				s.killAll()
				return 0, false
			}
			// Otherwise the node lives: the thread that started the supervisor ended.
		case <-s.gone:
			s.killAll()
			return 0, false
		}
	}
}

// killAll kills every process of the program, running or not.
func (s *supervisor) killAll() {
	// The program has not been reaped, so its group's id is still its own.
	_ = syscall.Kill(-s.pid, syscall.SIGKILL)
	s.sweep()
}

// sweep kills the supervisor's remaining children and waits until it has none, for up to
// KillGrace (a process in uninterruptible sleep dies only when its I/O ends). Its children are
// what left the program's group and was orphaned; a process whose parent still lives becomes one
// once the sweep has killed that parent, so the sweep repeats until none is left. A child is only
// signalled before the supervisor reaps it, so its pid cannot belong to anyone else.
func (s *supervisor) sweep() {
	deadline := time.NewTimer(s.spec.KillGrace)
	defer deadline.Stop()
	for {
		kids, err := children()
		if err != nil || len(kids) == 0 {
			return
		}
		alive := 0
		for _, k := range kids {
			if k.zombie {
				waitNoHang(k.pid)
				continue
			}
			_ = syscall.Kill(k.pid, syscall.SIGKILL)
			alive++
		}
		if alive == 0 {
			// Only zombies, now reaped: look again, for orphans they left.
			select {
			case <-deadline.C:
				return
			default:
				continue
			}
		}
		select {
		case <-s.chld:
		case <-deadline.C:
			return
		}
	}
}

// waitNoHang reaps pid if it has exited.
func waitNoHang(pid int) (syscall.WaitStatus, bool) {
	var ws syscall.WaitStatus
	for {
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		return ws, err == nil && got == pid
	}
}

// report sends r to the node. A node that is gone reads nothing, and the write fails unnoticed.
func (s *supervisor) report(r Report) { _ = s.status.Encode(r) }

// fail reports an error of the supervisor itself as a start failure that a retry may mend.
func (s *supervisor) fail(err error) int {
	s.report(Report{StartError: &StartFailure{Message: err.Error()}})
	return 125
}
