package rota

import (
	"context"
	"os"
	"time"

	"github.com/rotahq/rota/store"
)

// Retention says how long finished jobs are kept before the leader deletes them. Zero takes the
// default; a negative value keeps jobs in that state forever.
type Retention struct {
	Completed time.Duration // Defaults to 24 h.
	Cancelled time.Duration // Defaults to 7 days.
	Discarded time.Duration // Defaults to 7 days: failures deserve time to be looked at.
	Expired   time.Duration // Defaults to 7 days.
}

func (r Retention) withDefaults() Retention {
	setDefault(&r.Completed, 24*time.Hour)
	setDefault(&r.Cancelled, 7*24*time.Hour)
	setDefault(&r.Discarded, 7*24*time.Hour)
	setDefault(&r.Expired, 7*24*time.Hour)
	return r
}

// pruneBatch bounds one delete, so pruning never holds a long write lock or bloats one transaction.
const pruneBatch = 5000

// prune deletes finished jobs past their retention, and forgets nodes not seen for a while. It runs
// on the leader, every PruneInterval.
func (n *Node) prune(ctx context.Context) {
	now := n.clock.Now()
	for state, keep := range map[store.State]time.Duration{
		store.StateCompleted: n.cfg.Retention.Completed,
		store.StateCancelled: n.cfg.Retention.Cancelled,
		store.StateDiscarded: n.cfg.Retention.Discarded,
		store.StateExpired:   n.cfg.Retention.Expired,
	} {
		if keep < 0 {
			continue
		}
		for {
			deleted, err := n.cfg.Store.Prune(ctx, store.PruneParams{States: []store.State{state}, Before: now.Add(-keep), Limit: pruneBatch})
			if err != nil {
				if ctx.Err() == nil { // not leadership or the node ending
					n.logger.Warn("rota: pruning finished jobs failed", "state", state, "error", err)
				}
				break
			}
			if deleted < pruneBatch {
				break
			}
		}
	}
	if reg, ok := n.cfg.Store.(store.NodeRegistry); ok {
		if _, err := reg.PruneNodes(ctx, now.Add(-n.cfg.NodeStaleAfter)); err != nil && ctx.Err() == nil {
			n.logger.Warn("rota: pruning stale nodes failed", "error", err)
		}
	}
}

// register keeps this node's row in the registry fresh, and removes it when the node stops.
func (n *Node) register(ctx context.Context, reg store.NodeRegistry) {
	host, _ := os.Hostname()
	queues := make([]string, len(n.queues))
	for i, q := range n.queues {
		queues[i] = q.name
	}
	info := store.NodeInfo{ID: n.cfg.ID, Host: host, PID: os.Getpid(), Version: n.cfg.Version, Queues: queues, Kinds: n.kinds, StartedAt: n.startedAt}
	tick := n.clock.NewTicker(n.cfg.RegisterInterval)
	defer tick.Stop()
	for {
		if err := reg.RegisterNode(ctx, info); err != nil && ctx.Err() == nil {
			n.logger.Warn("rota: registering node failed", "error", err)
		}
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := reg.DeregisterNode(dctx, n.cfg.ID); err != nil {
				n.logger.Warn("rota: deregistering node failed; the leader will prune it", "error", err)
			}
			cancel()
			return
		case <-tick.Chan():
		}
	}
}
