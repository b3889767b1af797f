package rota

import (
	"cmp"
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
	// Stats is how long the fleet's per-minute counts are kept. Defaults to
	// StatsRetentionDefault.
	Stats time.Duration
}

func (r Retention) withDefaults() Retention {
	setDefault(&r.Completed, 24*time.Hour)
	setDefault(&r.Cancelled, 7*24*time.Hour)
	setDefault(&r.Discarded, 7*24*time.Hour)
	setDefault(&r.Expired, 7*24*time.Hour)
	setDefault(&r.Stats, StatsRetentionDefault)
	return r
}

// pruneBatch bounds one delete, so pruning never holds a long write lock or bloats one transaction.
const pruneBatch = 5000

// prune deletes finished jobs and the fleet's counts past their retention, and forgets nodes not
// seen for a while. It runs on the leader, every PruneInterval, and returns how many jobs it
// deleted and its first error.
func (n *Node) prune(ctx context.Context) (int, error) {
	now, err := n.storeNow(ctx)
	if err != nil {
		n.storeError(ctx, "prune", "", err)
		return 0, err
	}
	pruned := 0
	var firstErr error
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
				n.storeError(ctx, "prune", "", err)
				firstErr = cmp.Or(firstErr, err)
				break
			}
			pruned += deleted
			if deleted < pruneBatch {
				break
			}
		}
	}
	if keeper, ok := n.cfg.Store.(store.StatsKeeper); ok && n.cfg.Retention.Stats >= 0 {
		if _, err := keeper.PruneStats(ctx, now.Add(-n.cfg.Retention.Stats)); err != nil {
			n.storeError(ctx, "prune_stats", "", err)
			firstErr = cmp.Or(firstErr, err)
		}
	}
	if reg, ok := n.cfg.Store.(store.NodeRegistry); ok {
		if _, err := reg.PruneNodes(ctx, now.Add(-n.cfg.NodeStaleAfter)); err != nil {
			n.storeError(ctx, "prune_nodes", "", err)
			firstErr = cmp.Or(firstErr, err)
		}
	}
	return pruned, firstErr
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
		n.runService(ctx, ServiceRegistry, func(ctx context.Context) (int, error) {
			err := reg.RegisterNode(ctx, info)
			if err != nil {
				n.storeError(ctx, "register", "", err)
			}
			return 0, err
		})
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := reg.DeregisterNode(dctx, n.cfg.ID); err != nil {
				n.storeError(context.Background(), "deregister", "", err) // the leader will prune the row
			}
			cancel()
			return
		case <-tick.Chan():
		}
	}
}

// storeNow is the store's time where the store keeps one (a node registry: PostgreSQL's and
// Redis' server clocks), else this node's. A job's finalized time is the store's: a node whose
// clock runs ahead would otherwise prune jobs before their retention is over.
func (n *Node) storeNow(ctx context.Context) (time.Time, error) {
	if reg, ok := n.cfg.Store.(store.NodeRegistry); ok {
		return reg.Now(ctx)
	}
	return n.clock.Now(), nil
}
