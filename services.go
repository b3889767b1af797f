package rota

import (
	"cmp"
	"context"
	"os"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/internal/leader"
	"github.com/rotahq/rota/internal/maintenance"
	"github.com/rotahq/rota/internal/planner"
	"github.com/rotahq/rota/store"
)

// Names of the maintenance services, as leader.service events, logs, metrics and
// RestartLeaderService know them. Each runs every Config.<Name>Interval (RescueInterval,
// PruneInterval, CronInterval, RegisterInterval, TidyInterval, StatsInterval). The services
// themselves are in internal/maintenance; this file builds them for a node.
const (
	ServiceRescuer  = "rescuer"  // every node: returns jobs whose lease expired to their queue
	ServicePruner   = "pruner"   // leader: deletes finished jobs past their retention, stale nodes
	ServiceCron     = "cron"     // leader: plans the occurrences of cron schedules
	ServiceRegistry = "registry" // every node: refreshes the node's row in the node registry
	ServiceTidier   = "tidier"   // leader: a store's own housekeeping (store.Tidier)
	ServiceStats    = "stats"    // every node: adds its per-minute counts to the store (store.StatsKeeper)
)

// services runs the node's services and turns each pass into a leader.service event.
func (n *Node) services() maintenance.Runner {
	return maintenance.Runner{Clock: n.clock, Report: func(r maintenance.Run) {
		ev := Event{Type: EventServiceRun, Service: r.Service, Count: r.Count, Duration: r.Duration, At: n.clock.Now()}
		if r.Err != nil {
			ev.Error = r.Err.Error()
		}
		n.events.emit(ev)
	}}
}

// serviceFailed turns a service's failed store call into a store.error event.
func (n *Node) serviceFailed(ctx context.Context, op string, err error) {
	n.storeError(ctx, op, "", err)
}

// nodeServices are the services every node runs, for as long as it runs.
func (n *Node) nodeServices() []maintenance.Service {
	rescuer := &maintenance.Rescuer{Store: n.cfg.Store, Failed: n.serviceFailed, Rescued: func(row *store.JobRow) {
		n.events.emit(Event{Type: EventJobRescued, Job: row, At: n.clock.Now()})
	}}
	out := []maintenance.Service{rescuer.Service(ServiceRescuer, n.cfg.RescueInterval)}
	if reg, ok := n.cfg.Store.(store.NodeRegistry); ok {
		out = append(out, (&maintenance.Registry{Nodes: reg, Info: n.nodeInfo(), Failed: n.serviceFailed}).
			Service(ServiceRegistry, n.cfg.RegisterInterval))
	}
	if keeper, ok := n.cfg.Store.(store.StatsKeeper); ok {
		out = append(out, (&maintenance.Stats{Keeper: keeper, Counts: n.counts, Failed: n.serviceFailed}).
			Service(ServiceStats, n.cfg.StatsInterval))
	}
	return out
}

// leaderServices are the services the leader runs, while it leads.
func (n *Node) leaderServices() []maintenance.Service {
	out := []maintenance.Service{n.pruner().Service(ServicePruner, n.cfg.PruneInterval)}
	if t, ok := n.cfg.Store.(store.Tidier); ok {
		out = append(out, (&maintenance.Tidier{Store: t, Failed: n.serviceFailed}).Service(ServiceTidier, n.cfg.TidyInterval))
	}
	p := &planner.Planner{Store: n.cfg.Store, Clock: n.clock, Logger: n.logger, Horizon: n.cronHorizon(),
		Interval: n.cfg.CronInterval}
	out = append(out, (&maintenance.Cron{Plan: p.Pass, Failed: n.serviceFailed}).Service(ServiceCron, n.cfg.CronInterval))
	return out
}

// leaderLoop is a leader service that the elector starts when the node leads and stops when
// it no longer does.
func (n *Node) leaderLoop(s maintenance.Service) *leader.Loop {
	r := n.services()
	return &leader.Loop{ServiceName: s.Name, Every: s.Every, Clock: n.clock, Do: func(ctx context.Context) { r.Once(ctx, s) }}
}

// pruner is the node's pruner, on its retention settings.
func (n *Node) pruner() *maintenance.Pruner {
	p := &maintenance.Pruner{Jobs: n.cfg.Store, Now: n.storeNow, Failed: n.serviceFailed,
		Retention: map[store.State]time.Duration{
			store.StateCompleted: n.cfg.Retention.Completed,
			store.StateCancelled: n.cfg.Retention.Cancelled,
			store.StateDiscarded: n.cfg.Retention.Discarded,
			store.StateExpired:   n.cfg.Retention.Expired,
		},
		StatsRetention: n.cfg.Retention.Stats, NodeStaleAfter: n.cfg.NodeStaleAfter}
	if keeper, ok := n.cfg.Store.(store.StatsKeeper); ok {
		p.Stats = keeper
	}
	if reg, ok := n.cfg.Store.(store.NodeRegistry); ok {
		p.Nodes = reg
	}
	return p
}

// nodeInfo is the node as it registers itself.
func (n *Node) nodeInfo() store.NodeInfo {
	host, _ := os.Hostname()
	queues := make([]string, len(n.queues))
	for i, q := range n.queues {
		queues[i] = q.name
	}
	return store.NodeInfo{ID: n.cfg.ID, Host: host, PID: os.Getpid(), Version: n.cfg.Version, Queues: queues,
		Kinds: n.kinds, StartedAt: n.startedAt, RegisterEvery: n.cfg.RegisterInterval}
}

// storeNow is the store's time for the node's pruner (see storeTime). A job's finalized time is
// the store's: a node whose clock runs ahead would otherwise prune jobs before their retention
// is over.
func (n *Node) storeNow(ctx context.Context) (time.Time, error) {
	return storeTime(ctx, n.cfg.Store, n.clock)
}

// storeTime is s's time where it keeps one (a node registry: PostgreSQL's and Redis' server
// clocks), else clock's.
func storeTime(ctx context.Context, s store.Store, clock clockwork.Clock) (time.Time, error) {
	if reg, ok := s.(store.NodeRegistry); ok {
		return reg.Now(ctx)
	}
	return clock.Now(), nil
}

// cronHorizon is how far ahead the leader plans: CronHorizon when set, else at least long enough
// for the occurrences a dead leader planned to last until its successor's first pass: the
// lease's TTL (from its last renewal, before it died), one try, and a pass interval (its last
// pass came up to one before it died), with one more interval to spare.
func (n *Node) cronHorizon() time.Duration {
	if n.cfg.CronHorizon > 0 {
		return n.cfg.CronHorizon
	}
	ttl, try := cmp.Or(n.cfg.Leader.TTL, leader.TTLDefault), cmp.Or(n.cfg.Leader.TryEvery, leader.TryEveryDefault)
	return max(planner.HorizonDefault, ttl+try+2*n.cfg.CronInterval)
}
