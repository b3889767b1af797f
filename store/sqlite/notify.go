package sqlite

import (
	"context"
	"fmt"

	"github.com/rotahq/rota/store"
)

// subscriberBuffer is how many notifications a subscriber may fall behind before it gets the
// look-again pair in their place (fanout.Missed). Insert notifications are coalesced per queue
// and commit, so a subscriber that keeps up with commits never gets near it.
const subscriberBuffer = 256

// Subscribe delivers this Store's notifications, after the commits they describe, until ctx ends
// or the store closes. Other processes on the same file reach subscribers through the watcher
// (see watcher), as a TopicChanged that says only that something changed. A subscriber that
// falls behind is not waited for: it gets fanout.Missed in place of what it had no room for.
func (s *Store) Subscribe(ctx context.Context) (<-chan store.Notification, error) {
	ch, err := s.hub.Subscribe(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: subscribe: %w", ErrClosed)
	}
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if !s.watchClosed {
		if err := s.startWatch(); err != nil {
			// This process's own notifications still work; other processes' commits are found
			// by polling, as before the watcher existed.
			s.log.Warn("sqlite: cannot watch for other processes' commits; they are found by polling", "error", err)
		}
	}
	return ch, nil
}
