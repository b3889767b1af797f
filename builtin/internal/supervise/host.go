//go:build unix

package supervise

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// init turns the process into an exec host when a node started it as one (see builtin's
// startExecHost), and exits when the host is done. The node runs its own binary again: no other
// file to install or keep in step, and any Go program that imports this package, `rota serve`
// or a service that embeds a node, supervises the same way.
func init() {
	if version, ok := os.LookupEnv(Env); ok {
		os.Exit(serve(version))
	}
}

// DeathSignal is what the kernel sends the host when its node dies (on Linux): a second way to
// learn it besides the socket's end, and catchable, unlike SIGKILL, so the host can take the
// programs' processes with it.
const DeathSignal = syscall.SIGUSR1

// host runs a node's programs. It is their parent and, on Linux, the subreaper of everything
// they start: a process whose parent dies comes to it, even one that left its program's process
// group, so none can be lost. When a program ends, the host kills what is left of its group; when
// the node ends, everything.
type host struct {
	conn *socket
	chld chan os.Signal
	// nodePID is the host's parent at its start: the parent-death signal also comes when the
	// node's thread that started the host ends, and only a new parent means the node's end.
	nodePID int
	devNull *os.File
	// programs holds the running programs by pid, which is also their process group's id.
	// Each stays there, unreaped, until its group has been killed, so the id cannot be reused.
	programs map[int]*running
	byID     map[uint64]*running
	// kills receives the programs whose stop grace has passed.
	kills chan *running
	// quitting says that the host was asked to end: it does once its programs have.
	quitting bool
}

// running is a program that started.
type running struct {
	id    uint64
	pid   int
	grace time.Duration
	kill  *time.Timer
}

// serve runs the host and returns its exit code.
func serve(version string) int {
	_ = os.Unsetenv(Env)
	// The socket must not reach the programs: it would outlive the node in them.
	syscall.CloseOnExec(SocketFD)
	// Its reader blocks a thread of its own rather than the runtime's poller.
	_ = syscall.SetNonblock(SocketFD, false)
	if version != Version {
		fmt.Fprintf(os.Stderr, "rota exec host: speaks version %s, its node %s\n", Version, version)
		return 125
	}
	chld, sigs := make(chan os.Signal, 1), make(chan os.Signal, 4)
	// Before anything can exit or signal, so that nothing is missed.
	signal.Notify(chld, syscall.SIGCHLD)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, DeathSignal)
	// Where the kernel will not have it (an old one, a sandbox), a program's group is still
	// killed; only what leaves the group escapes, as outside Linux.
	_ = becomeSubreaper()
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rota exec host: %v\n", err)
		return 125
	}
	h := &host{
		conn: &socket{fd: SocketFD}, chld: chld, nodePID: os.Getppid(), devNull: devNull,
		programs: map[int]*running{}, byID: map[uint64]*running{}, kills: make(chan *running),
	}
	msgs, gone := make(chan received), make(chan error, 1)
	go h.listen(msgs, gone)
	for {
		select {
		case m := <-msgs:
			h.handle(m)
		case <-chld:
			h.reap()
			if len(h.programs) == 0 {
				h.killOrphans()
			}
		case r := <-h.kills:
			if h.byID[r.id] == r {
				_ = syscall.Kill(-r.pid, syscall.SIGKILL)
			}
		case sig := <-sigs:
			switch {
			case sig != DeathSignal:
				// Someone asked the host itself to end: it stops the programs first, as the
				// node would, rather than leave them to run, and ends after them.
				h.quitting = true
				for _, r := range h.programs {
					h.stop(r)
				}
			case os.Getppid() != h.nodePID:
				h.killAll()
				return 1
			}
			// Otherwise the node lives: the thread that started the host ended.
		case <-gone:
			h.killAll()
			return 0
		}
		if h.quitting && len(h.programs) == 0 {
			h.killAll()
			return 0
		}
	}
}

// received is a message of the node, with the descriptors that came with it.
type received struct {
	Message
	files []*os.File
}

// listen reads the node's messages until the socket ends, and then reports why on gone.
func (h *host) listen(msgs chan<- received, gone chan<- error) {
	r := bufio.NewReaderSize(h.conn, 64<<10)
	for {
		b, err := ReadFrame(r)
		if err != nil {
			gone <- err
			return
		}
		var m received
		if err := json.Unmarshal(b, &m.Message); err != nil {
			gone <- fmt.Errorf("exec host protocol: %w", err)
			return
		}
		if m.Op == OpStart {
			if m.files = h.conn.take(2); len(m.files) != 2 {
				gone <- errors.New("exec host protocol: a start without its output")
				return
			}
		}
		msgs <- m
	}
}

// handle acts on a message of the node.
func (h *host) handle(m received) {
	switch m.Op {
	case OpStart:
		h.start(m.ID, m.Spec, m.files[0], m.files[1])
	case OpStop:
		if r := h.byID[m.ID]; r != nil {
			h.stop(r)
		}
	}
}

// start starts a program in a process group of its own, with the environment the node chose
// and the node's pipes as its stdout and stderr, and tells the node how that went. It runs on
// the main thread, which lives as long as the host: a program's parent-death signal (SIGKILL)
// means the host's end, not a thread's.
func (h *host) start(id uint64, spec *Spec, stdout, stderr *os.File) {
	defer stdout.Close()
	defer stderr.Close()
	if h.quitting {
		// The node will start another host for it.
		h.send(Message{Op: OpStartError, ID: id, StartError: &StartFailure{Message: "the exec host is ending"}})
		return
	}
	pid, err := h.startProcess(spec, stdout, stderr)
	if err != nil {
		h.send(Message{Op: OpStartError, ID: id, StartError: NewStartFailure(err)})
		return
	}
	r := &running{id: id, pid: pid, grace: spec.KillGrace}
	h.programs[pid], h.byID[id] = r, r
	h.send(Message{Op: OpStarted, ID: id, PID: pid})
}

func (h *host) startProcess(spec *Spec, stdout, stderr *os.File) (int, error) {
	if spec == nil || len(spec.Args) == 0 {
		return 0, errors.New("exec host: a start without a program")
	}
	env := spec.Env
	if env == nil {
		env = []string{} // nil would mean the host's own
	}
	// os.StartProcess does not check the directory first, and a missing one reads as a missing
	// program ("fork/exec /usr/bin/echo: no such file or directory").
	if spec.Dir != "" {
		if _, err := os.Stat(spec.Dir); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				pe.Op = "chdir"
			}
			return 0, err
		}
	}
	sys := &syscall.SysProcAttr{Setpgid: true}
	SetParentDeathSignal(sys, syscall.SIGKILL)
	p, err := os.StartProcess(spec.Path, spec.Args, &os.ProcAttr{
		Dir: spec.Dir, Env: env, Files: []*os.File{h.devNull, stdout, stderr}, Sys: sys,
	})
	if err != nil {
		return 0, err
	}
	// The host reaps its children itself (reap), so it never calls p.Wait.
	pid := p.Pid
	_ = p.Release()
	return pid, nil
}

// stop asks a program to end: SIGTERM to its group, SIGKILL after its grace.
func (h *host) stop(r *running) {
	if r.kill != nil {
		return
	}
	_ = syscall.Kill(-r.pid, syscall.SIGTERM)
	r.kill = time.AfterFunc(r.grace, func() { h.kills <- r })
}

// exited reports a program's end, once its group has been killed and it has been reaped.
func (h *host) exited(r *running, ws syscall.WaitStatus) {
	delete(h.programs, r.pid)
	delete(h.byID, r.id)
	if r.kill != nil {
		// Had it fired, the main loop drops its kill: byID no longer holds r.
		r.kill.Stop()
	}
	h.send(Message{Op: OpExited, ID: r.id, Exit: newExitReport(ws)})
}

// send writes m to the node. A node that is gone reads nothing, and the write fails unnoticed:
// the socket's end tells the host.
func (h *host) send(m Message) {
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	_ = h.conn.write(append(FrameHeader(len(b)), b...))
}

// killOrphans kills the host's children when it runs no program: they are orphans of programs
// that ended (on Linux, where they come to the host), which left their programs' groups before
// and so outlived them. While another program runs they cannot be told from its own, and wait
// for this moment or the node's end. They are reaped as any child (reap).
func (h *host) killOrphans() {
	kids, _ := children()
	for _, pid := range kids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// killAll kills every process of every program, running or not, and what they left: the node is
// gone, or the host is ending.
func (h *host) killAll() {
	// The programs have not been reaped, so their groups' ids are still their own.
	for pid := range h.programs {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	h.sweep()
}

// sweep kills the host's remaining children and reaps them until it has none, for up to
// three seconds (a process in uninterruptible sleep dies only when its I/O ends). Its children
// are the programs and what left their groups and was orphaned; a process whose parent still
// lives becomes one once the sweep has killed that parent, so the sweep repeats until none is
// left. A child is only signalled before the host reaps it, so its pid cannot be anyone else's.
func (h *host) sweep() {
	deadline := time.NewTimer(3 * time.Second)
	defer deadline.Stop()
	for {
		reapAll()
		kids, err := children()
		if err != nil {
			// Without a list of its children, the host knows its programs.
			kids = kids[:0]
			for pid := range h.programs {
				kids = append(kids, pid)
			}
		}
		if len(kids) == 0 {
			return
		}
		for _, pid := range kids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			delete(h.programs, pid)
		}
		select {
		case <-h.chld:
		case <-deadline.C:
			return
		}
	}
}

// reapAll reaps every child that has exited.
func reapAll() {
	var ws syscall.WaitStatus
	for {
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
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
