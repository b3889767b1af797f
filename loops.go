package rota

import (
	"context"
	"slices"
	"time"

	"github.com/rotahq/rota/store"
)

// heartbeat renews the leases of this node's running jobs every third of the lease, and cancels
// the ones a user asked to cancel from another process.
func (n *Node) heartbeat(ctx context.Context) {
	ticker := n.clock.NewTicker(n.cfg.JobLease / 3)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.Chan():
		}
		n.refreshLimits(ctx)
		n.handBackStrays(ctx)
		if n.runningCount() == 0 && n.completer.Pending() == 0 {
			continue
		}
		cancelled, err := n.cfg.Store.Heartbeat(ctx, n.cfg.ID, n.cfg.JobLease)
		if err != nil {
			n.storeError(ctx, "heartbeat", "", err) // leases lapse if the store stays away
			continue
		}
		for _, id := range cancelled {
			n.cancelLocal(id)
		}
	}
}

// listen wakes queues when the store pushes an insert, resubscribing if the subscription ends.
// ch and err are the first subscription's, which Start made before any queue claimed, so that
// no insert between a queue's first claim and the subscription goes unheard.
func (n *Node) listen(ctx context.Context, notifier store.Notifier, ch <-chan store.Notification, err error) {
	byName := make(map[string]*queue, len(n.queues))
	for _, q := range n.queues {
		byName[q.name] = q
	}
	for {
		if err != nil {
			n.storeError(ctx, "subscribe", "", err) // polling only for now
		} else {
			for note := range ch {
				if note.Queue == "" {
					// A store that cannot name the queue (SQLite, for another process's
					// commits; any store after a reconnect, or for a subscriber that fell
					// behind, fanout.Missed): every queue takes the note.
					for _, q := range n.queues {
						q.noted(note)
					}
				} else if q := byName[note.Queue]; q != nil {
					q.noted(note)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-n.clock.After(time.Second):
		}
		ch, err = notifier.Subscribe(ctx)
	}
}

// refreshLimits marks the queues that a fleet-wide limit may hold back. Limits change rarely; a
// heartbeat's delay in noticing one only delays the extra wake-ups, never the limit itself, which
// the store enforces.
func (n *Node) refreshLimits(ctx context.Context) {
	limits, err := n.cfg.Store.ListLimits(ctx)
	if err != nil {
		n.storeError(ctx, "list_limits", "", err)
		return
	}
	kindLimited := false
	queueLimited := map[string]bool{}
	for _, l := range limits {
		switch l.Scope {
		case store.LimitQueue:
			queueLimited[l.Name] = true
		case store.LimitKind:
			kindLimited = kindLimited || slices.Contains(n.kinds, l.Name)
		}
	}
	for _, q := range n.queues {
		q.limited.Store(kindLimited || queueLimited[q.name])
	}
}
