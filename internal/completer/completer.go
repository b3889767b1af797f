// Package completer records the outcomes of attempts in batches.
//
// While one write is in flight, new outcomes gather; the next write takes them all. An idle node
// therefore writes each outcome at once (lowest latency), and a busy one writes hundreds per round
// trip (highest throughput), without a timer to tune. A failed write is retried with backoff and
// never dropped: outcomes are only lost if the process dies, and then the jobs' leases expire and
// the rescuer takes them.
package completer

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rotahq/rota/store"
)

// BatchMax caps one write, so one statement's parameter list and transaction stay small.
const BatchMax = 1000

// Retry delays after a failed write: short at first (a lost connection is often back at once),
// never longer than a few seconds so a recovered store is used soon.
const (
	retryMin = 50 * time.Millisecond
	retryMax = 5 * time.Second
)

type item struct {
	outcome store.Outcome
	done    func(applied bool)
}

// Completer batches outcomes into store.Complete calls. Create it with New, then Run it.
type Completer struct {
	store  store.Store
	clock  clockwork.Clock
	logger *slog.Logger

	mu      sync.Mutex
	pending []item
	wake    chan struct{}
}

// New returns a Completer writing to s.
func New(s store.Store, clock clockwork.Clock, logger *slog.Logger) *Completer {
	return &Completer{store: s, clock: clock, logger: logger, wake: make(chan struct{}, 1)}
}

// Add queues an outcome. done, if not nil, is called once the write settled: applied is false
// when the store ignored the outcome because its fence was stale.
func (c *Completer) Add(o store.Outcome, done func(applied bool)) {
	c.mu.Lock()
	c.pending = append(c.pending, item{outcome: o, done: done})
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Pending reports how many outcomes wait to be written.
func (c *Completer) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// Run writes outcomes until drain is closed and nothing is pending, or until ctx ends (then what is
// pending is abandoned to the rescuer).
func (c *Completer) Run(ctx context.Context, drain <-chan struct{}) {
	for {
		if ctx.Err() != nil {
			return // what is pending is the rescuer's now
		}
		batch := c.take()
		if len(batch) > 0 {
			c.write(ctx, batch)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-drain:
			if c.Pending() == 0 {
				return
			}
		}
	}
}

func (c *Completer) take() []item {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := min(len(c.pending), BatchMax)
	batch := c.pending[:n:n]
	c.pending = c.pending[n:]
	return batch
}

func (c *Completer) write(ctx context.Context, batch []item) {
	outcomes := make([]store.Outcome, len(batch))
	for i, it := range batch {
		outcomes[i] = it.outcome
	}
	delay := retryMin
	for {
		applied, err := c.store.Complete(ctx, outcomes)
		if err == nil {
			for i, it := range batch {
				if it.done != nil {
					it.done(applied[i])
				}
			}
			return
		}
		c.logger.Warn("rota: recording job outcomes failed; retrying", "jobs", len(batch), "retry_in", delay, "error", err)
		select {
		case <-ctx.Done():
			c.logger.Error("rota: gave up recording job outcomes; their leases will expire and the rescuer will retry them",
				"jobs", len(batch), "error", ctx.Err())
			return
		case <-c.clock.After(delay):
		}
		delay = min(delay*2, retryMax)
	}
}
