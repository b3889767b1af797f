//go:build unix

package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rotahq/rota/builtin/internal/supervise"
)

// superviseArgv0 is the name a supervisor shows in ps.
const superviseArgv0 = "rota-exec-supervisor"

// runProgram runs p under a supervisor: a process of this same binary (package builtin/internal/supervise) that
// starts the program, relays stops to it, reports how it ended, and kills every process of it
// that is left, whether the program ended or the node died. The node alone could not: what the
// program starts does not die with the node, and a process that left the program's group
// (setsid) cannot be found from it.
func runProgram(ctx context.Context, p program, stdout, stderr io.Writer) (programEnd, error) {
	if err := ctx.Err(); err != nil {
		return programEnd{}, startError(p.name, err)
	}
	path, err := resolveProgram(p.name)
	if err != nil {
		return programEnd{}, startError(p.name, err)
	}
	s, err := startSupervised(supervise.Spec{
		Path: path, Args: append([]string{p.name}, p.args...), Env: p.env, Dir: p.dir,
		KillGrace: KillGrace, NodePID: os.Getpid(),
	}, stdout, stderr)
	if err != nil {
		return programEnd{}, err
	}
	return s.wait(ctx)
}

// resolveProgram finds the file a program name means as exec.Command does: a bare name through
// the node's PATH (not the program's), a path as it is, relative to the job's dir.
func resolveProgram(name string) (string, error) {
	if filepath.Base(name) != name {
		return name, nil
	}
	return exec.LookPath(name)
}

// supervised is a running supervisor whose program has started.
type supervised struct {
	name string
	cmd  *exec.Cmd
	// life is the node's end of the life pipe. Nothing else holds it (os.Pipe's descriptors are
	// closed on exec), so the supervisor sees its end when the node ends, however it ends.
	life    *os.File
	status  *os.File
	reports *json.Decoder
	// pid is the program's, and its process group's id.
	pid int
}

// startSupervised starts a supervisor for spec and waits for it to start the program. An error
// starting the program itself is classified as startError does.
func startSupervised(spec supervise.Spec, stdout, stderr io.Writer) (*supervised, error) {
	name := spec.Args[0]
	exe, err := supervise.SelfExecutable()
	if err != nil {
		return nil, fmt.Errorf("start %s: find this binary to run its supervisor: %w", name, err)
	}
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: pipe to its supervisor: %w", name, err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		lifeR.Close()
		lifeW.Close()
		return nil, fmt.Errorf("start %s: pipe from its supervisor: %w", name, err)
	}
	cmd := &exec.Cmd{
		Path: exe,
		Args: []string{superviseArgv0},
		// The marker and nothing else: the program's environment travels in the spec, so no
		// variable of the node's reaches the program by way of the supervisor. GORACE stops a
		// race-enabled build (a test binary) from sleeping a second at exit for reports that
		// other threads might still print.
		Env:        []string{supervise.Env + "=" + supervise.Version, "GORACE=atexit_sleep_ms=0"},
		Stdout:     stdout,
		Stderr:     stderr,
		ExtraFiles: []*os.File{lifeR, statusW},
		// Its own group keeps it out of the terminal's ^C, which is the node's to handle.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
		// A process that inherited the output and escaped the supervisor (outside Linux, one
		// that called setsid) would hold it open after the program ended: stop reading then.
		WaitDelay: KillGrace + time.Second,
	}
	supervise.SetParentDeathSignal(cmd.SysProcAttr, supervise.DeathSignal)
	err = cmd.Start()
	lifeR.Close()
	statusW.Close()
	if err != nil {
		lifeW.Close()
		statusR.Close()
		return nil, fmt.Errorf("start %s: start its supervisor: %w", name, err)
	}
	s := &supervised{name: name, cmd: cmd, life: lifeW, status: statusR, reports: json.NewDecoder(statusR)}
	if err := json.NewEncoder(lifeW).Encode(spec); err != nil {
		return nil, s.abandon(fmt.Errorf("start %s: send it to its supervisor: %w", name, err))
	}
	var r supervise.Report
	if err := s.reports.Decode(&r); err != nil {
		return nil, s.abandon(fmt.Errorf("start %s: its supervisor did not report: %w", name, err))
	}
	if r.StartError != nil {
		return nil, s.abandon(startError(name, r.StartError.Err()))
	}
	s.pid = r.PID
	return s, nil
}

// abandon ends a supervisor whose program did not start, and returns err.
func (s *supervised) abandon(err error) error {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.life.Close()
	s.status.Close()
	return err
}

// wait relays the end of ctx to the supervisor as a stop, and returns how the program ended once
// the supervisor has ended, and with it every process of the program.
func (s *supervised) wait(ctx context.Context) (programEnd, error) {
	var stopped atomic.Bool
	exited, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-exited:
			return
		case <-ctx.Done():
		}
		stopped.Store(true)
		_ = json.NewEncoder(s.life).Encode(supervise.Request{Stop: true})
		// A supervisor kills its program KillGrace after a stop, and gives what is left as long
		// again to die. One that has not ended soon after is stuck: it is killed, and its
		// program with it (its parent-death signal).
		t := time.NewTimer(2*KillGrace + time.Second)
		defer t.Stop()
		select {
		case <-t.C:
			_ = s.cmd.Process.Kill()
		case <-exited:
		}
	}()
	waitErr := s.cmd.Wait()
	close(exited)
	<-watched
	s.life.Close()
	defer s.status.Close()

	end := programEnd{stopped: stopped.Load()}
	// The supervisor exits as its program did; the report says it better.
	if ee := (*exec.ExitError)(nil); !errors.As(waitErr, &ee) {
		end.waitErr = waitErr
	}
	r, err := s.final()
	if err == nil {
		end.exitCode, end.state = r.Code, r.State
		return end, nil
	}
	// The supervisor was killed before it could clean up: end what is left of the group. Its
	// id is free for reuse only once the group is empty, when the signal finds no one.
	_ = syscall.Kill(-s.pid, syscall.SIGKILL)
	if end.stopped {
		end.exitCode, end.state = -1, s.cmd.ProcessState.String()
		return end, nil
	}
	return programEnd{}, fmt.Errorf("program %s: its supervisor ended (%s) without saying how the program did: %w", s.name, s.cmd.ProcessState, err)
}

// final reads the supervisor's last report.
func (s *supervised) final() (*supervise.ExitReport, error) {
	// The supervisor has exited, so what it wrote is in the pipe, then its end. The deadline
	// guards against a process that kept the other end, which none should.
	_ = s.status.SetReadDeadline(time.Now().Add(time.Second))
	var r supervise.Report
	if err := s.reports.Decode(&r); err != nil {
		return nil, err
	}
	if r.Exit == nil {
		return nil, errors.New("its last report holds no exit")
	}
	return r.Exit, nil
}
