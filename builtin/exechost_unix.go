//go:build unix

package builtin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/rotahq/rota/builtin/internal/supervise"
)

// superviseArgv0 is the name the exec host shows in ps.
const superviseArgv0 = "rota-exec-supervisor"

// execHost is the node's side of its exec host (package builtin/internal/supervise): the one
// process of this same binary that starts the node's programs, relays stops to them, reports how
// they ended, and kills every process of them that is left, whether a program ended or the node
// died. The node alone could not: what a program starts does not die with the node, and a process
// that left the program's group (setsid) cannot be found from it.
type execHost struct {
	cmd  *exec.Cmd
	conn *net.UnixConn
	// gone is closed once the host's socket has ended, and err says why.
	gone chan struct{}
	err  error

	// sendMu orders frames on the socket. mu guards the jobs; listen takes it, never sendMu,
	// so a large start blocked on a full socket cannot stop the host's reports from draining.
	sendMu sync.Mutex
	mu     sync.Mutex
	nextID uint64
	jobs   map[uint64]chan supervise.Message
}

// hosts holds the node's exec host, started at the first exec job and again after one died.
var hosts struct {
	mu  sync.Mutex
	cur *execHost
}

// currentHost returns the node's running exec host, starting one if it has none.
func currentHost() (*execHost, error) {
	hosts.mu.Lock()
	defer hosts.mu.Unlock()
	if h := hosts.cur; h != nil && !h.ended() {
		return h, nil
	}
	h, err := startExecHost()
	if err != nil {
		return nil, err
	}
	hosts.cur = h
	return h, nil
}

// startExecHost starts an exec host and returns once it runs.
func startExecHost() (*execHost, error) {
	exe, err := supervise.SelfExecutable()
	if err != nil {
		return nil, fmt.Errorf("find this binary to run its exec host: %w", err)
	}
	// Closed on exec from its creation: only the host may hold the other end, so that its end
	// means the node's.
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("socket to the exec host: %w", err)
	}
	nodeEnd, hostEnd := os.NewFile(uintptr(fds[0]), "rota-exec-host"), os.NewFile(uintptr(fds[1]), "rota-exec-node")
	defer hostEnd.Close()
	c, err := net.FileConn(nodeEnd)
	nodeEnd.Close()
	if err != nil {
		return nil, fmt.Errorf("socket to the exec host: %w", err)
	}
	cmd := &exec.Cmd{
		Path: exe,
		Args: []string{superviseArgv0},
		// The marker and nothing else: a program's environment travels in its start, so no
		// variable of the node's reaches it by way of the host. GORACE stops a race-enabled
		// build (a test binary) from sleeping a second at exit for reports that other threads
		// might still print.
		Env: []string{supervise.Env + "=" + supervise.Version, "GORACE=atexit_sleep_ms=0"},
		// What the host itself has to say (a crash) goes where the node's own errors go.
		Stderr:     os.Stderr,
		ExtraFiles: []*os.File{hostEnd},
		// Its own group keeps it out of the terminal's ^C, which is the node's to handle.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	supervise.SetParentDeathSignal(cmd.SysProcAttr, supervise.DeathSignal)
	if err := cmd.Start(); err != nil {
		c.Close()
		return nil, fmt.Errorf("start the exec host: %w", err)
	}
	h := &execHost{cmd: cmd, conn: c.(*net.UnixConn), gone: make(chan struct{}), jobs: map[uint64]chan supervise.Message{}}
	go h.listen()
	return h, nil
}

// ended reports whether the host's socket has ended.
func (h *execHost) ended() bool {
	select {
	case <-h.gone:
		return true
	default:
		return false
	}
}

// listen hands the host's messages to the jobs they are about, until the socket ends: the host
// died (killed, out of memory), which every job still running learns from gone.
func (h *execHost) listen() {
	var err error
	for {
		var b []byte
		if b, err = supervise.ReadFrame(h.conn); err != nil {
			break
		}
		var m supervise.Message
		if err = json.Unmarshal(b, &m); err != nil {
			err = fmt.Errorf("exec host protocol: %w", err)
			break
		}
		h.mu.Lock()
		if ch := h.jobs[m.ID]; ch != nil {
			ch <- m // buffered for every message of a job
			if m.Op != supervise.OpStarted {
				delete(h.jobs, m.ID)
			}
		}
		h.mu.Unlock()
	}
	h.conn.Close()
	_ = h.cmd.Wait()
	h.err = fmt.Errorf("%s, its socket: %w", h.cmd.ProcessState, err)
	close(h.gone)
}

// send writes m to the host with the descriptors files, attached to its frame's length.
func (h *execHost) send(m supervise.Message, files ...*os.File) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = syscall.UnixRights(fds...)
	}
	h.sendMu.Lock()
	defer h.sendMu.Unlock()
	header := supervise.FrameHeader(len(b))
	if _, _, err := h.conn.WriteMsgUnix(header, oob, nil); err != nil {
		return err
	}
	_, err = h.conn.Write(b)
	return err
}

// register returns a new id and the channel of its messages.
func (h *execHost) register() (uint64, chan supervise.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextID++
	ch := make(chan supervise.Message, 2)
	h.jobs[h.nextID] = ch
	return h.nextID, ch
}

func (h *execHost) unregister(id uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.jobs, id)
}

// errHostGone is a job's error when its host ended under it.
var errHostGone = errors.New("the node's exec host ended")
