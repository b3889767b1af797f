//go:build unix

package builtin

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// output is a program's stdout and stderr: pipes whose write ends go to the host, and whose read
// ends the node copies into the job's captures.
type output struct {
	r, w   [2]*os.File
	copied [2]chan struct{}
}

func newOutput(stdout, stderr io.Writer) (*output, error) {
	o := &output{}
	for i, dst := range []io.Writer{stdout, stderr} {
		r, w, err := os.Pipe()
		if err != nil {
			o.closeWriters()
			o.wait()
			return nil, fmt.Errorf("output pipe: %w", err)
		}
		o.r[i], o.w[i], o.copied[i] = r, w, make(chan struct{})
		go func() {
			defer close(o.copied[i])
			_, _ = io.Copy(dst, r)
		}()
	}
	return o, nil
}

func (o *output) closeWriters() {
	for i, w := range o.w {
		if w != nil {
			w.Close()
			o.w[i] = nil
		}
	}
}

// wait waits until the output has been copied, and returns exec.ErrWaitDelay if a process that
// inherited it (outside Linux, one that escaped with setsid) kept it open KillGrace and a second
// after the program's end: then it stops reading.
func (o *output) wait() error {
	var err error
	t := time.NewTimer(KillGrace + time.Second)
	defer t.Stop()
	for i, r := range o.r {
		if r == nil {
			continue
		}
		if err == nil {
			select {
			case <-o.copied[i]:
			case <-t.C:
				err = exec.ErrWaitDelay
			}
		}
		r.Close() // ends a copy still reading
		<-o.copied[i]
	}
	return err
}
