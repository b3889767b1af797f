//go:build unix

package supervise

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// How a node and its exec host talk. The node starts its own binary with Env set to Version and
// no variable of its own environment, and one end of a unix stream socketpair as SocketFD; only
// the node holds the other end, so its end (EOF) means that the node is gone, however it ended.
//
// Both ways carry frames: a 4-byte big-endian length, then a Message in JSON. A start carries the
// write ends of the program's stdout and stderr pipes as SCM_RIGHTS, attached to its frame's
// length, so the output flows from the program to the node without passing through the host.
//
// Node to host: OpStart (with Spec), OpStop. Host to node: OpStarted (with PID) or OpStartError,
// and after a start, one OpExited (with Exit).
const (
	Env      = "ROTA_EXEC_SUPERVISOR"
	Version  = "2"
	SocketFD = 3 // ExtraFiles start at 3
)

// The operations of a Message.
const (
	OpStart      = "start"
	OpStop       = "stop"
	OpStarted    = "started"
	OpStartError = "start_error"
	OpExited     = "exited"
)

// maxFrame bounds a frame: a job's args are at most a few MiB, and a larger length means that
// the stream is out of step.
const maxFrame = 64 << 20

// Message is one frame of the protocol. ID, the node's choice, names the program it is about.
type Message struct {
	Op         string        `json:"op"`
	ID         uint64        `json:"id"`
	Spec       *Spec         `json:"spec,omitempty"`
	PID        int           `json:"pid,omitempty"`
	StartError *StartFailure `json:"start_error,omitempty"`
	Exit       *ExitReport   `json:"exit,omitempty"`
}

// Spec is a program the host runs.
type Spec struct {
	// Path is the file to execute; Args holds argv, its name first.
	Path string   `json:"path"`
	Args []string `json:"args"`
	// Env is the program's whole environment.
	Env []string `json:"env"`
	Dir string   `json:"dir,omitempty"`
	// KillGrace is how long the program has between SIGTERM and SIGKILL when stopped.
	KillGrace time.Duration `json:"kill_grace"`
}

// FrameHeader returns the length prefix of a frame of n bytes.
func FrameHeader(n int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

// ReadFrame reads one frame's payload from r.
func ReadFrame(r io.Reader) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n > maxFrame {
		return nil, fmt.Errorf("exec host protocol: a frame of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("exec host protocol: a frame cut short: %w", err)
	}
	return b, nil
}

// ExitReport is how a program ended.
type ExitReport struct {
	// Code is the exit code, -1 when a signal ended the program.
	Code int `json:"code"`
	// State reads as os.ProcessState.String does.
	State string `json:"state"`
}

func newExitReport(ws syscall.WaitStatus) *ExitReport {
	return &ExitReport{Code: ws.ExitStatus(), State: waitState(ws)}
}

// waitState describes ws as os.ProcessState.String describes the same status, so an error reads
// the same with a host between the node and its program as without.
func waitState(ws syscall.WaitStatus) string {
	s := ""
	switch {
	case ws.Exited():
		s = "exit status " + strconv.Itoa(ws.ExitStatus())
	case ws.Signaled():
		s = "signal: " + ws.Signal().String()
	}
	if ws.CoreDump() {
		s += " (core dumped)"
	}
	return s
}

// StartFailure carries an error of starting a program across the socket, with the one fact the
// node's startError decides by: whether it is one of the permanent causes.
type StartFailure struct {
	Message string `json:"message"`
	Cause   string `json:"cause,omitempty"`
}

// startCauses are the causes startError treats as permanent, by the names the socket carries.
var startCauses = []struct {
	name string
	err  error
}{
	{"not-found", exec.ErrNotFound},
	{"not-exist", fs.ErrNotExist},
	{"permission", fs.ErrPermission},
}

// NewStartFailure describes err for the node.
func NewStartFailure(err error) *StartFailure {
	f := &StartFailure{Message: err.Error()}
	for _, c := range startCauses {
		if errors.Is(err, c.err) {
			f.Cause = c.name
			break
		}
	}
	return f
}

// Err rebuilds the error on the node's side: its message, and the cause errors.Is finds.
func (f *StartFailure) Err() error {
	for _, c := range startCauses {
		if c.name == f.Cause {
			return &remoteError{msg: f.Message, cause: c.err}
		}
	}
	return errors.New(f.Message)
}

// remoteError is an error that happened in the host.
type remoteError struct {
	msg   string
	cause error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.cause }
