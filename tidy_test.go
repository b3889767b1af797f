package rota

import (
	"context"
	"testing"

	"github.com/rotahq/rota/store"
)

// tidyStore is a store with housekeeping of its own, which reports each Tidy call.
type tidyStore struct {
	store.Store
	calls chan struct{}
}

func (s tidyStore) Tidy(context.Context) error {
	s.calls <- struct{}{}
	return nil
}

// The leader lets a store that has housekeeping do it at once and then every TidyInterval.
func TestLeaderTidiesStore(t *testing.T) {
	calls := make(chan struct{}, 10)
	b := setup(t, nil, func(cfg *Config) { cfg.Store = tidyStore{Store: cfg.Store, calls: calls} })
	recv(t, calls)
	// Once every loop of the node waits on the clock, a second call could only come from the
	// clock moving: there is none yet, and one after the interval passes.
	b.timers(t, baseTimers(b.node))
	for range 2 {
		select {
		case <-calls:
			t.Fatal("Tidy ran again before the interval passed")
		default:
		}
		b.clock.Advance(TidyIntervalDefault)
		recv(t, calls)
	}
}
