package rota

import (
	"context"
	"fmt"

	"github.com/rotahq/rota/store"
)

// Limit caps, fleet-wide, how many jobs of a queue or kind run at once and how often they start;
// see store.Limit. The store enforces it at claim time, whichever nodes claim.
type Limit = store.Limit

// Limit scopes.
const (
	LimitQueue = store.LimitQueue
	LimitKind  = store.LimitKind
)

// SetLimit creates or replaces a limit; one with neither MaxRunning nor Rate removes it.
func (c *Client) SetLimit(ctx context.Context, l Limit) error {
	if err := l.Validate(); err != nil {
		return fmt.Errorf("rota: %w: %w", ErrInvalid, err)
	}
	if err := c.store.SetLimit(ctx, l); err != nil {
		return fmtErr("set limit", err)
	}
	return nil
}

// Limits returns every limit.
func (c *Client) Limits(ctx context.Context) ([]Limit, error) {
	limits, err := c.store.ListLimits(ctx)
	if err != nil {
		return nil, fmtErr("list limits", err)
	}
	return limits, nil
}

// QueueLoad is how busy a queue is, for producers deciding whether optional work is worth adding.
type QueueLoad struct {
	Queue   string `json:"queue"`
	Paused  bool   `json:"paused"`
	Waiting int64  `json:"waiting"` // available now
	Running int64  `json:"running"`
	// MaxRunning is the queue's fleet-wide concurrency limit, 0 when it has none.
	MaxRunning int `json:"max_running"`
}

// Saturated reports whether the queue runs as many jobs as its limit allows.
func (l QueueLoad) Saturated() bool { return l.MaxRunning > 0 && l.Running >= int64(l.MaxRunning) }

// QueueLoad reports how many jobs of queue wait and run, and its limit, so a caller can skip
// optional work while the workers are busy.
func (c *Client) QueueLoad(ctx context.Context, queue string) (QueueLoad, error) {
	load, err := c.queueCounts(ctx, queue)
	if err != nil {
		return load, err
	}
	limits, err := c.Limits(ctx)
	if err != nil {
		return load, err
	}
	for _, l := range limits {
		if l.Scope == LimitQueue && l.Name == queue {
			load.MaxRunning = l.MaxRunning
		}
	}
	return load, nil
}

// queueCounts is QueueLoad without the limit: how many jobs of queue wait and run.
func (c *Client) queueCounts(ctx context.Context, queue string) (QueueLoad, error) {
	load := QueueLoad{Queue: queue}
	var stats []store.QueueStats
	if l, ok := c.store.(store.QueueLoader); ok {
		one, err := l.QueueLoad(ctx, queue)
		if err != nil {
			return load, fmtErr("queue load", err)
		}
		stats = []store.QueueStats{one}
	} else {
		var err error
		if stats, err = c.store.QueueStats(ctx); err != nil {
			return load, fmtErr("queue load", err)
		}
	}
	for _, s := range stats {
		if s.Queue == queue {
			load.Paused, load.Waiting, load.Running = s.Paused, s.Counts[store.StateAvailable], s.Counts[store.StateRunning]
		}
	}
	return load, nil
}
