package rota

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rotahq/rota/internal/memory"
)

// memoryCheckEvery bounds how often the node reads the machine's free memory: claims can come
// thousands of times a second, memory does not change that fast.
const memoryCheckEvery = time.Second

// memFloor keeps a node from taking new work while the machine's available memory is below
// Config.MinFreeMemory. It emits an event when it closes and when it opens again.
type memFloor struct {
	min       uint64
	available func() (uint64, error)

	mu      sync.Mutex
	checked time.Time
	closed  bool
}

// EventMemoryLow and EventMemoryOK mark the node closing to new work for lack of memory, and
// opening again; Reason gives the bytes available and the floor. EventMemoryUnreadable is a
// floor set where available memory cannot be read (Error says why): the floor is ignored.
const (
	EventMemoryLow        EventType = "node.memory_low"
	EventMemoryOK         EventType = "node.memory_ok"
	EventMemoryUnreadable EventType = "node.memory_unreadable"
)

// admits reports whether the node may claim now.
func (n *Node) memoryAdmits() bool {
	f := &n.memFloor
	f.mu.Lock() // before min, which turns 0 where memory cannot be read
	defer f.mu.Unlock()
	if f.min == 0 {
		return true
	}
	now := n.clock.Now()
	if !f.checked.IsZero() && now.Sub(f.checked) < memoryCheckEvery {
		return !f.closed
	}
	f.checked = now
	avail, err := f.available()
	if err != nil {
		if errors.Is(err, memory.ErrUnsupported) {
			n.events.emit(Event{Type: EventMemoryUnreadable, At: now, Error: err.Error()})
			f.min = 0
		}
		return true
	}
	low := avail < f.min
	if low != f.closed {
		f.closed = low
		typ := EventMemoryOK
		if low {
			typ = EventMemoryLow
		}
		n.events.emit(Event{Type: typ, At: now, Reason: fmt.Sprintf("%d bytes available, floor %d bytes", avail, f.min)})
	}
	return !low
}
