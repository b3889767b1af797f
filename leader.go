package rota

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rotahq/rota/internal/leader"
	"github.com/rotahq/rota/store"
)

// LeaderService is work that must run on one node of the fleet only: the leader. Start must not
// block; it starts goroutines bound to ctx, which is cancelled when leadership ends, before Stop is
// called. Both must be idempotent. A Start that fails is retried at the next lease renewal.
type LeaderService interface {
	Name() string
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// LeaderConfig tunes the election. Zero fields take the defaults.
type LeaderConfig struct {
	// Standalone makes the node leader at once, without a lease: for one process that owns its
	// store. Nodes on a store without leases are always standalone.
	Standalone bool
	// TTL of the leader lease. Defaults to 30 s.
	TTL time.Duration
	// RenewEvery is how often the leader renews. Defaults to 10 s.
	RenewEvery time.Duration
	// TryEvery is how often the other nodes try to take the lease. Defaults to 10 s.
	TryEvery time.Duration
	// Services run on the leader only, after the built-in ones (pruner, tidier, cron).
	Services []LeaderService
}

// Event types about leadership. EventServiceState is a leader service (Service) that started
// under the lease's Token, or failed to start (retried at the next renewal) or to stop, or is
// restarted on request: Reason is started, start_failed, stop_failed or restarting, Error why it
// failed.
const (
	EventLeaderElected EventType = "leader.elected"
	EventLeaderLost    EventType = "leader.lost"
	EventServiceState  EventType = "leader.service_state"
)

// serviceState reports a leader service's change as a leader.service_state event.
func (n *Node) serviceState(c leader.ServiceChange) {
	ev := Event{Type: EventServiceState, Service: c.Service, Reason: c.What, Token: c.Token, At: n.clock.Now()}
	if c.Err != nil {
		ev.Error = c.Err.Error()
	}
	n.events.emit(ev)
}

// storeReset reports that the store's identity changed under the node.
func (n *Node) storeReset(reason string) {
	n.events.emit(Event{Type: EventStoreReset, Reason: reason, At: n.clock.Now()})
}

// electorError reports a failed store call of an elector as a store.error event, its op
// prefixed with prefix. A lease call cut short by the node stopping is not an error.
func (n *Node) electorError(prefix string) func(op string, err error) {
	return func(op string, err error) {
		if op != leader.OpRelease && errors.Is(err, context.Canceled) {
			return
		}
		n.events.emit(Event{Type: EventStoreError, Op: prefix + op, Error: err.Error(), At: n.clock.Now()})
	}
}

// LeaderToken returns the leader lease's fencing token from the context a LeaderService was
// started with. It grows each time leadership changes hands: write it with the service's effects,
// and have their target refuse tokens older than the newest it has seen, so a deposed leader that
// acts late (after a long pause) cannot overwrite its successor. Standalone leaders have token 0.
func LeaderToken(ctx context.Context) (int64, bool) { return leader.TokenFrom(ctx) }

// IsLeader reports whether this node currently leads.
func (n *Node) IsLeader() bool {
	leading, _ := n.elector.Leader()
	return leading
}

// RestartLeaderService stops and starts the named leader service on this node, if it leads: call it
// when the service's settings change. To reach the leader from any node or process, use
// Client.RestartLeaderService.
func (n *Node) RestartLeaderService(name string) { n.elector.Restart(name) }

// RestartLeaderService asks the leader, on whichever node it runs, to restart the named leader
// service, at its next lease renewal (within 10 s by default).
func (c *Client) RestartLeaderService(ctx context.Context, name string) error {
	leaser, ok := c.store.(store.Leaser)
	if !ok {
		return fmt.Errorf("rota: restart %s: %T has no leases", name, c.store)
	}
	if err := leader.RequestRestart(ctx, leaser, name); err != nil {
		return fmtErr("restart leader service", err)
	}
	return nil
}

func (n *Node) newElector() error {
	lc := n.cfg.Leader
	leaser, _ := n.cfg.Store.(store.Leaser)
	el, err := leader.New(leader.Config{
		Leaser:     leaser,
		Identity:   n.cfg.Store.Identity,
		Owner:      n.cfg.ID,
		TTL:        lc.TTL,
		RenewEvery: lc.RenewEvery,
		TryEvery:   lc.TryEvery,
		Standalone: lc.Standalone,
		Clock:      n.clock,
		Logger:     n.logger,
		OnChange: func(c leader.Change) {
			typ := EventLeaderLost
			if c.Leader {
				typ = EventLeaderElected
			}
			n.events.emit(Event{Type: typ, Reason: c.Reason, Token: c.Token, At: c.At})
		},
		OnError:   n.electorError(""),
		OnReset:   n.storeReset,
		OnService: n.serviceState,
	})
	if err != nil {
		return err
	}
	for _, s := range n.leaderServices() {
		el.Add(n.leaderLoop(s))
	}
	for _, s := range lc.Services {
		el.Add(s)
	}
	n.elector = el
	return nil
}
