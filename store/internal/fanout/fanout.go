// Package fanout hands a store's notifications to its subscribers. Each subscriber has a
// buffered channel of its own; one that falls behind misses notifications rather than slowing
// the store down, which is why the runtime polls as well. A channel is closed when its
// subscription's context ends or when the hub closes.
package fanout

import (
	"context"
	"errors"
	"sync"

	"github.com/rotahq/rota/store"
)

// ErrClosed is returned by Subscribe on a closed hub.
var ErrClosed = errors.New("store is closed")

// Hub fans notifications out. Create it with New.
type Hub struct {
	buffer int

	mu     sync.Mutex
	subs   map[chan store.Notification]struct{}
	closed bool
}

// New returns a hub whose subscribers may fall buffer notifications behind.
func New(buffer int) *Hub {
	return &Hub{buffer: buffer, subs: make(map[chan store.Notification]struct{})}
}

// Subscribe returns a channel of the notifications published from now on, until ctx ends or the
// hub closes.
func (h *Hub) Subscribe(ctx context.Context) (<-chan store.Notification, error) {
	ch := make(chan store.Notification, h.buffer)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	h.subs[ch] = struct{}{}
	context.AfterFunc(ctx, func() { h.remove(ch) })
	return ch, nil
}

func (h *Hub) remove(ch chan store.Notification) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[ch]; ok {
		delete(h.subs, ch)
		close(ch)
	}
}

// Publish hands notes to every subscriber that has room for them.
func (h *Hub) Publish(notes []store.Notification) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		for _, n := range notes {
			select {
			case ch <- n:
			default: // best effort: the subscriber polls as well
			}
		}
	}
}

// Close closes every subscriber's channel; later subscriptions fail with ErrClosed.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for ch := range h.subs {
		delete(h.subs, ch)
		close(ch)
	}
}
