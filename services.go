package rota

import (
	"context"
	"time"

	"github.com/rotahq/rota/internal/leader"
)

// Names of the maintenance services, as leader.service events, logs, metrics and
// RestartLeaderService know them. Each runs every Config.<Name>Interval (RescueInterval,
// PruneInterval, CronInterval, RegisterInterval, TidyInterval, StatsInterval).
const (
	ServiceRescuer  = "rescuer"  // every node: returns jobs whose lease expired to their queue
	ServicePruner   = "pruner"   // leader: deletes finished jobs past their retention, stale nodes
	ServiceCron     = "cron"     // leader: plans the occurrences of cron schedules
	ServiceRegistry = "registry" // every node: refreshes the node's row in the node registry
	ServiceTidier   = "tidier"   // leader: a store's own housekeeping (store.Tidier)
	ServiceStats    = "stats"    // every node: adds its per-minute counts to the store (store.StatsKeeper)
)

// runService runs one pass of a maintenance service and emits its leader.service event. A pass
// cut short by ctx (the node stopping, leadership ending) says nothing.
func (n *Node) runService(ctx context.Context, name string, pass func(context.Context) (int, error)) {
	start := n.clock.Now()
	count, err := pass(ctx)
	if err != nil && ctx.Err() != nil {
		return
	}
	ev := Event{Type: EventServiceRun, Service: name, Count: count, Duration: n.clock.Since(start), At: n.clock.Now()}
	if err != nil {
		ev.Error = err.Error()
	}
	n.events.emit(ev)
}

// serviceLoop is a leader service that runs pass at once and then every interval.
func (n *Node) serviceLoop(name string, every time.Duration, pass func(context.Context) (int, error)) *leader.Loop {
	return &leader.Loop{ServiceName: name, Every: every, Clock: n.clock, Do: func(ctx context.Context) {
		n.runService(ctx, name, pass)
	}}
}
