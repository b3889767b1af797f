package rota

import (
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"
)

// claimErrorRepeat is how often a queue whose claims keep failing for the same reason says so
// again: often enough that a log read at any moment shows the trouble is still there, rarely
// enough that a store refusing every claim (down, flushed, read-only) does not flood the log
// with one line per poll and wake-up.
const claimErrorRepeat = time.Minute

// claimErrors decides which of a queue's claim failures are logged: the first, a new reason, and
// the same reason again after claimErrorRepeat; and says when claims work again. It belongs to
// the queue's fetch loop, which alone calls it.
type claimErrors struct {
	clock  clockwork.Clock
	logger *slog.Logger
	queue  string

	failing bool
	reason  string
	since   time.Time
	logged  time.Time
	count   int
}

// failed records a failed claim and logs it unless it only repeats what was logged lately.
func (c *claimErrors) failed(err error) {
	now := c.clock.Now()
	c.count++
	if !c.failing {
		c.failing, c.since, c.count = true, now, 1
	}
	reason := err.Error()
	if reason == c.reason && now.Sub(c.logged) < claimErrorRepeat {
		return
	}
	c.reason, c.logged = reason, now
	c.logger.Warn("rota: claim failed; will retry at the next poll", "queue", c.queue, "error", err,
		"failing_since", c.since, "failures", c.count)
}

// succeeded records a claim that worked, and says so once after failures.
func (c *claimErrors) succeeded() {
	if !c.failing {
		return
	}
	c.logger.Info("rota: claims work again", "queue", c.queue, "failing_since", c.since, "failures", c.count)
	*c = claimErrors{clock: c.clock, logger: c.logger, queue: c.queue}
}
