//go:build unix

package supervise

import (
	"io"
	"os"
	"syscall"
)

// socket is the host's end of its node's socket: a reader that keeps the descriptors that come
// with the bytes, in order, for take.
type socket struct {
	fd    int
	files []*os.File
}

// Read reads bytes and the descriptors sent with them. It blocks its thread, which is the
// reading goroutine's alone.
func (s *socket) Read(p []byte) (int, error) {
	oob := make([]byte, syscall.CmsgSpace(16*4))
	for {
		n, oobn, _, _, err := syscall.Recvmsg(s.fd, p, oob, recvFlags)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		s.keep(oob[:oobn])
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

// keep adds the descriptors of a control message to those waiting for take.
func (s *socket) keep(oob []byte) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return
	}
	for _, m := range msgs {
		fds, err := syscall.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if recvFlags == 0 {
				syscall.CloseOnExec(fd)
			}
			s.files = append(s.files, os.NewFile(uintptr(fd), "rota-exec-output"))
		}
	}
}

// take returns the next n descriptors, fewer if fewer came.
func (s *socket) take(n int) []*os.File {
	n = min(n, len(s.files))
	f := s.files[:n:n]
	s.files = s.files[n:]
	return f
}

// write writes all of b.
func (s *socket) write(b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Write(s.fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}
