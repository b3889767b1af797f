// Package syncbuf is a bytes.Buffer that one goroutine may write while another reads it: what a
// test needs to read the log of a server, a process or a store that is still running.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is safe for concurrent Write and String. The zero value is empty and ready.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
