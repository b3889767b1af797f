package rota

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/rotahq/rota/internal/leader"
	"github.com/rotahq/rota/store"
)

// singletons gates kinds behind named leases: a kind whose worker requires a lease is claimed only
// while this node holds it, so exactly one such worker runs fleet-wide. Losing the lease stops the
// claims at once and hands the kind's running jobs back, as a shutdown does: their contexts are
// cancelled and they return to their queue without using an attempt. The elector gives the lease
// up before it can pass to another node, so a handler that honours its context has stopped by
// the time the next holder starts.
type singletons struct {
	mu       sync.Mutex
	held     map[string]bool     // lease name → held by this node
	kinds    map[string][]string // lease name → kinds it gates
	electors []*leader.Elector
}

// Event types of singleton leases; Reason starts with the singleton's name.
const (
	EventSingletonAcquired EventType = "singleton.acquired"
	EventSingletonLost     EventType = "singleton.lost"
)

// singletonLeasePrefix keeps singleton leases apart from the leader lease and users' names.
const singletonLeasePrefix = "rota.singleton:"

func (n *Node) newSingletons() error {
	s := &n.singletons
	s.held, s.kinds = map[string]bool{}, map[string][]string{}
	for _, kind := range n.kinds {
		name := n.cfg.Workers.kinds[kind].singleton
		if n.cfg.Singleton != "" {
			name = n.cfg.Singleton
		}
		if name != "" {
			s.kinds[name] = append(s.kinds[name], kind)
		}
	}
	if len(s.kinds) == 0 {
		return nil
	}
	leaser, ok := n.cfg.Store.(store.Leaser)
	if !ok {
		return fmt.Errorf("singleton workers need a store with leases; %T has none", n.cfg.Store)
	}
	for name := range s.kinds {
		el, err := leader.New(leader.Config{
			Leaser: leaser, Identity: n.cfg.Store.Identity, Name: singletonLeasePrefix + name, Owner: n.cfg.ID,
			TTL: n.cfg.Leader.TTL, RenewEvery: n.cfg.Leader.RenewEvery, TryEvery: n.cfg.Leader.TryEvery,
			Clock: n.clock, Logger: n.logger.With("singleton", name), OnError: n.electorError("singleton_"),
			OnReset: n.storeReset,
			OnChange: func(c leader.Change) {
				s.mu.Lock()
				s.held[name] = c.Leader
				s.mu.Unlock()
				typ := EventSingletonLost
				if c.Leader {
					typ = EventSingletonAcquired
				}
				n.events.emit(Event{Type: typ, Reason: name + ": " + c.Reason, At: c.At})
				if c.Leader {
					for _, q := range n.queues {
						q.signal()
					}
				} else {
					n.handBack(s.kinds[name], errSingletonLost)
				}
			},
		})
		if err != nil {
			return err
		}
		s.electors = append(s.electors, el)
	}
	return nil
}

func (n *Node) runSingletons(ctx context.Context) {
	for _, el := range n.singletons.electors {
		n.goBackground(func() { el.Run(ctx) })
	}
}

// claimKinds returns the kinds this node may claim now: all it has workers for, less the
// singleton kinds whose lease another node holds.
func (n *Node) claimKinds() []string {
	s := &n.singletons
	if len(s.kinds) == 0 {
		return n.kinds
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	kinds := make([]string, 0, len(n.kinds))
	for _, kind := range n.kinds {
		if !s.gated(kind) {
			kinds = append(kinds, kind)
		}
	}
	return kinds
}

// gated reports whether kind waits for a singleton lease this node does not hold; s.mu is held.
func (s *singletons) gated(kind string) bool {
	for name, gated := range s.kinds {
		if !s.held[name] && slices.Contains(gated, kind) {
			return true
		}
	}
	return false
}

// singletonLost reports whether kind is gated by a singleton lease this node does not hold.
func (n *Node) singletonLost(kind string) bool {
	s := &n.singletons
	if len(s.kinds) == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gated(kind)
}

// handBack cancels the running jobs of kinds with cause, which hands them back to their queue.
func (n *Node) handBack(kinds []string, cause error) {
	n.mu.Lock()
	var stop []*execution
	for _, e := range n.running {
		if slices.Contains(kinds, e.row.Kind) {
			stop = append(stop, e)
		}
	}
	n.mu.Unlock()
	for _, e := range stop {
		n.interrupt(e, cause)
	}
}
