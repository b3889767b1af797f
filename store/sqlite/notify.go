package sqlite

import (
	"context"
	"fmt"
	"sync"

	"github.com/rotahq/rota/store"
)

// subscriberBuffer is how many notifications a subscriber may fall behind before it misses some.
// Insert notifications are coalesced per queue and commit, so a subscriber that keeps up with
// commits never gets near it.
const subscriberBuffer = 256

// hub fans notifications out to the subscribers of this Store, after the commit they describe.
// Other processes on the same file learn of this one's commits through their watcher (see
// watcher), as a TopicChanged that says only that something changed.
type hub struct {
	mu     sync.Mutex
	subs   map[chan store.Notification]struct{}
	closed bool
}

func (h *hub) init() { h.subs = make(map[chan store.Notification]struct{}) }

// Subscribe delivers this process's notifications until ctx ends or the store closes. A
// subscriber that falls behind misses notifications rather than slowing the writer.
func (s *Store) Subscribe(ctx context.Context) (<-chan store.Notification, error) {
	ch := make(chan store.Notification, subscriberBuffer)
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	if s.hub.closed {
		return nil, fmt.Errorf("sqlite: subscribe: %w", ErrClosed)
	}
	if err := s.startWatch(); err != nil {
		// This process's own notifications still work; other processes' commits are found by
		// polling, as before the watcher existed.
		s.log.Warn("sqlite: cannot watch for other processes' commits; they are found by polling", "error", err)
	}
	s.hub.subs[ch] = struct{}{}
	context.AfterFunc(ctx, func() { s.hub.remove(ch) })
	return ch, nil
}

func (h *hub) remove(ch chan store.Notification) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[ch]; ok {
		delete(h.subs, ch)
		close(ch)
	}
}

func (h *hub) publish(notes []store.Notification) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		for _, n := range notes {
			select {
			case ch <- n:
			default:
			}
		}
	}
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for ch := range h.subs {
		delete(h.subs, ch)
		close(ch)
	}
}
