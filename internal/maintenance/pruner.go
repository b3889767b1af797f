package maintenance

import (
	"cmp"
	"context"
	"time"

	"github.com/rotahq/rota/store"
)

// PruneBatch bounds one delete, so pruning never holds a long write lock or bloats one
// transaction.
const PruneBatch = 5000

// Pruner deletes finished jobs and the fleet's counts past their retention, and forgets nodes
// not seen for a while. It runs on the leader. Ages are judged by the store's clock (Now),
// which stamped the jobs' finalized times: a node whose clock is off prunes neither early nor
// late.
type Pruner struct {
	Jobs interface {
		Prune(ctx context.Context, p store.PruneParams) (int, error)
	}
	// Stats and Nodes are nil for a store that keeps no counts or no registry.
	Stats interface {
		PruneStats(ctx context.Context, before time.Time) (int, error)
	}
	Nodes interface {
		PruneNodes(ctx context.Context, before time.Time) (int, error)
	}
	Now func(ctx context.Context) (time.Time, error)
	// Retention is how long jobs of each final state are kept; a negative one keeps them.
	Retention map[store.State]time.Duration
	// StatsRetention is how long counts are kept (negative: forever); NodeStaleAfter how long
	// a node may go unseen.
	StatsRetention time.Duration
	NodeStaleAfter time.Duration
	Failed         Failed
}

// Service is the pruner running every every.
func (p *Pruner) Service(name string, every time.Duration) Service {
	return Service{Name: name, Every: every, Pass: p.Pass}
}

// Pass prunes once and returns how many jobs it deleted and its first error.
func (p *Pruner) Pass(ctx context.Context) (int, error) {
	now, err := p.Now(ctx)
	if err != nil {
		p.Failed(ctx, "prune", err)
		return 0, err
	}
	pruned := 0
	var firstErr error
	for state, keep := range p.Retention {
		if keep < 0 {
			continue
		}
		for {
			deleted, err := p.Jobs.Prune(ctx, store.PruneParams{States: []store.State{state}, Before: now.Add(-keep), Limit: PruneBatch})
			if err != nil {
				p.Failed(ctx, "prune", err)
				firstErr = cmp.Or(firstErr, err)
				break
			}
			pruned += deleted
			if deleted < PruneBatch {
				break
			}
		}
	}
	if p.Stats != nil && p.StatsRetention >= 0 {
		if _, err := p.Stats.PruneStats(ctx, now.Add(-p.StatsRetention)); err != nil {
			p.Failed(ctx, "prune_stats", err)
			firstErr = cmp.Or(firstErr, err)
		}
	}
	if p.Nodes != nil {
		if _, err := p.Nodes.PruneNodes(ctx, now.Add(-p.NodeStaleAfter)); err != nil {
			p.Failed(ctx, "prune_nodes", err)
			firstErr = cmp.Or(firstErr, err)
		}
	}
	return pruned, firstErr
}
