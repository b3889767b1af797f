// Package fanout hands a store's notifications to its subscribers. Each subscriber has a
// buffered channel of its own; one that falls behind is not waited for, so that it cannot slow
// the store down, but it loses no wake-up: in place of the notifications it had no room for it
// gets the look-again pair (see Missed). A channel is closed when its subscription's context
// ends or when the hub closes.
package fanout

import (
	"context"
	"errors"
	"sync"

	"github.com/rotahq/rota/store"
)

// ErrClosed is returned by Subscribe on a closed hub.
var ErrClosed = errors.New("store is closed")

// Missed is what a subscriber that fell behind receives in place of the notifications it had
// no room for: jobs may have become available in any queue, and any job may have ended. The
// runtime claims on every queue and its waiters look again, as after a store's reconnect.
// Dropping notifications instead once left a node's last job waiting for the next poll, a
// second later: a fan-in's 10,000 completions publish 10,000 finals in a few commits, more than
// a subscriber busy with the same CPU reads in time, and the final step's insert came after.
var Missed = [...]store.Notification{{Topic: store.TopicInsert}, {Topic: store.TopicChanged}}

// Hub fans notifications out. Create it with New.
type Hub struct {
	// buffer is how many notifications a subscriber may fall behind; its channel holds
	// len(Missed) more, kept for the look-again pair.
	buffer int

	mu     sync.Mutex
	subs   map[chan store.Notification]*sub
	closed bool
}

// sub is what Publish knows of a subscriber's channel: how many notifications it has sent into
// it, and how many it had sent when it sent the last look-again pair (-1 before any). Those sent
// less those waiting in the channel were read, so the pair's first note is unread while no more
// than pairAt were.
type sub struct{ sent, pairAt int }

// New returns a hub whose subscribers may fall buffer notifications behind, at least one.
func New(buffer int) *Hub {
	buffer = max(buffer, 1)
	return &Hub{buffer: buffer, subs: make(map[chan store.Notification]*sub)}
}

// Subscribe returns a channel of the notifications published from now on, until ctx ends or the
// hub closes.
func (h *Hub) Subscribe(ctx context.Context) (<-chan store.Notification, error) {
	ch := make(chan store.Notification, h.buffer+len(Missed))
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	h.subs[ch] = &sub{pairAt: -1}
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

// Publish hands notes to every subscriber, or Missed to one that has no room for them. While the
// first note of a subscriber's pair is unread, the pair stands for every later notification too,
// which is dropped: the subscriber acts on each half of the pair only after reading it (the
// runtime claims on its first, its waiters look again on its second), so after their commits.
// Once the first half is read, notifications go in again: one read between the halves is not
// covered by the second, which only wakes waiters. No send blocks: only Publish sends, under
// h.mu, and a channel's length only falls meanwhile; a notification goes in while fewer than
// buffer wait, the pair when buffer do, and nothing while its first half is unread, after which
// at most its second half waits: the channel has room for the pair whenever it is sent.
func (h *Hub) Publish(notes []store.Notification) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch, s := range h.subs {
		for _, n := range notes {
			waiting := len(ch)
			switch {
			case s.sent-waiting <= s.pairAt: // the pair's first half is unread
			case waiting < h.buffer:
				ch <- n
				s.sent++
			default:
				s.pairAt = s.sent
				for _, m := range Missed {
					ch <- m
				}
				s.sent += len(Missed)
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
