//go:build unix

package supervise

import (
	"errors"
	"io/fs"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// How a node and the supervisor of one exec program talk (see supervise.go). The node starts its
// own binary with Env set to Version and no variable of its own environment, and
// two pipes: the supervisor reads the life pipe, which only the node can write, and writes the
// status pipe. Each carries JSON values, one after the other.
//
// Life pipe, node to supervisor: one Spec, then at most one Request to stop.
// Its end (EOF) before the supervisor is done means the node is gone.
//
// Status pipe, supervisor to node: one Report saying that the program started (PID) or
// why it could not (StartError); after a start, one more with how it ended (Exit).
const (
	Env     = "ROTA_EXEC_SUPERVISOR"
	Version = "1"
	// The pipes' descriptors in the supervisor: ExtraFiles start at 3.
	LifeFD   = 3
	StatusFD = 4
)

// Spec is the program a supervisor runs.
type Spec struct {
	// Path is the file to execute; Args holds argv, its name first.
	Path string   `json:"path"`
	Args []string `json:"args"`
	// Env is the program's whole environment.
	Env []string `json:"env"`
	Dir string   `json:"dir,omitempty"`
	// KillGrace is how long the program has between SIGTERM and SIGKILL when stopped.
	KillGrace time.Duration `json:"kill_grace"`
	// NodePID tells the supervisor, when its parent-death signal arrives, whether its parent is
	// really gone: the kernel also sends it when the node's thread that started it ends.
	NodePID int `json:"node_pid"`
}

// Request asks the supervisor to stop the program: SIGTERM to its group, SIGKILL after
// KillGrace.
type Request struct {
	Stop bool `json:"stop,omitempty"`
}

// Report is one message of the supervisor to its node.
type Report struct {
	PID        int           `json:"pid,omitempty"`
	StartError *StartFailure `json:"start_error,omitempty"`
	Exit       *ExitReport   `json:"exit,omitempty"`
}

// ExitReport is how the program ended.
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
// the same with a supervisor between the node and its program as without.
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

// StartFailure carries an error of starting the program across the pipe, with the one fact
// startError decides by: whether it is one of the permanent causes.
type StartFailure struct {
	Message string `json:"message"`
	Cause   string `json:"cause,omitempty"`
}

// startCauses are the causes startError treats as permanent, by the names the pipe carries.
var startCauses = []struct {
	name string
	err  error
}{
	{"not-found", exec.ErrNotFound},
	{"not-exist", fs.ErrNotExist},
	{"permission", fs.ErrPermission},
}

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

// err rebuilds the error on the node's side: its message, and the cause errors.Is finds.
func (f *StartFailure) Err() error {
	for _, c := range startCauses {
		if c.name == f.Cause {
			return &remoteError{msg: f.Message, cause: c.err}
		}
	}
	return errors.New(f.Message)
}

// remoteError is an error that happened in the supervisor.
type remoteError struct {
	msg   string
	cause error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.cause }

// exitCode is what the supervisor exits with, so that it looks from outside (ps, a debugger)
// like the program did: its code, or 128 plus the signal's number, as a shell reports it. The
// node reads the report instead, which says which signal and whether it dumped core.
func exitCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
