package e2e

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// node is one `rota serve` process.
type node struct {
	id  string
	cmd *exec.Cmd
	out *logBuffer
	// file copies out when logsEnv is set.
	file *os.File
	// done is closed when the process has exited; err is its exit status then.
	done chan struct{}
	err  error
	// killedAt is when the test sent SIGKILL, zero if it did not.
	killedAt time.Time
}

// signal sends sig to the node's process.
func (n *node) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := n.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to node %s: %v", sig, n.id, err)
	}
}

// kill sends SIGKILL and waits for the process to be gone. It records when: the node can do
// nothing after that instant, which bounds its leadership and its jobs.
func (n *node) kill(t *testing.T) {
	t.Helper()
	n.signal(t, syscall.SIGKILL)
	n.killedAt = time.Now()
	select {
	case <-n.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("node %s still running 10s after SIGKILL", n.id)
	}
}

// exited reports whether the process has ended.
func (n *node) exited() bool {
	select {
	case <-n.done:
		return true
	default:
		return false
	}
}

// cleanup kills the process if it still runs (a stopped one too: SIGKILL ends it) and waits
// for it, so no test leaves a node behind.
func (n *node) cleanup() {
	if !n.exited() {
		_ = n.cmd.Process.Kill()
		<-n.done
	}
}

// waitLog polls the node's log until a record with message msg appears, and returns it.
func (n *node) waitLog(t *testing.T, msg string, within time.Duration) record {
	t.Helper()
	var r record
	logged := eventually(within, pollEvery, func() bool {
		if rs := n.records(msg); len(rs) > 0 {
			r = rs[0]
			return true
		}
		if n.exited() {
			t.Fatalf("node %s exited (%v) before logging %q:\n%s", n.id, n.err, msg, n.out.String())
		}
		return false
	})
	if !logged {
		t.Fatalf("node %s did not log %q within %v:\n%s", n.id, msg, within, n.out.String())
	}
	return r
}

// records returns the node's log records whose message starts with msg, oldest first.
func (n *node) records(msg string) []record {
	var out []record
	for _, r := range parseLog(n.out.String()) {
		if strings.HasPrefix(r.Msg, msg) {
			out = append(out, r)
		}
	}
	return out
}
