package rota

import (
	"context"
	"fmt"
	"time"

	"github.com/rotahq/rota/store"
)

// Wait blocks until job id reaches a final state and returns it. A job that completed returns
// nil error and carries its Result; one that ended otherwise (discarded, cancelled, expired)
// returns a *JobFailedError with its last error. Wait works from any process: it listens for the
// store's push where the store has one and polls as well, so a notification the store could not
// deliver (while its connection was down) costs one poll interval, not a hang.
func (c *Client) Wait(ctx context.Context, id int64) (*JobRow, error) {
	var finals <-chan store.Notification
	if n, ok := c.store.(store.Notifier); ok {
		subCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		ch, err := n.Subscribe(subCtx)
		if err != nil {
			c.logger.Warn("rota: wait: cannot subscribe, polling only", "job", id, "error", err)
		} else {
			finals = ch
		}
	}
	ticker := c.clock.NewTicker(c.waitPoll)
	defer ticker.Stop()
	for {
		row, err := c.store.Get(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				// The wait ended during the read: whatever the store made of its cut-short read
				// (over a network, a timeout at the deadline that says the store unavailable),
				// the wait ended by its context.
				err = ctx.Err()
			}
			return nil, fmt.Errorf("rota: wait for job %d: %w", id, err)
		}
		if row.State.Final() {
			if row.State == StateCompleted {
				return row, nil
			}
			return row, &JobFailedError{Job: row}
		}
		if err := waitForFinal(ctx, id, &finals, ticker.Chan()); err != nil {
			return nil, fmt.Errorf("rota: wait for job %d: %w", id, err)
		}
	}
}

// waitForFinal returns when the job may have ended: a notification names it or says that another
// process changed the store, or a poll is due.
// A closed subscription is dropped, leaving the poll.
func waitForFinal(ctx context.Context, id int64, finals *<-chan store.Notification, poll <-chan time.Time) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-poll:
			return nil
		case n, ok := <-*finals:
			if !ok {
				*finals = nil
				continue
			}
			if (n.Topic == store.TopicFinal && n.JobID == id) || n.Topic == store.TopicChanged {
				return nil
			}
		}
	}
}
