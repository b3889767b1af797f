package rota

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rotahq/rota/internal/leader"
	"github.com/rotahq/rota/store"
)

// Status is who serves a store: the nodes that registered and the leader's lease, and the
// reasons work waits that no node will run.
type Status struct {
	// Now is the store's time, which Leader and the nodes' times are relative to.
	Now time.Time `json:"now"`
	// Leader is nil when no node ever led.
	Leader *LeaderStatus `json:"leader"`
	Nodes  []NodeStatus  `json:"nodes"`
	// Warnings name work that cannot run: see Warning.
	Warnings []Warning `json:"warnings"`
	// Queues are the counts the warnings were drawn from, for a caller that shows both (the
	// dashboard), so that it need not count again; /v1/queues serves them.
	Queues []store.QueueStats `json:"-"`
}

// NodeStatus is a registered node and whether it is still alive.
type NodeStatus struct {
	store.NodeInfo
	// Stale is set when the node has not been seen for two of its registration intervals
	// (StatusStaleAfter): it died, or cannot reach the store. The leader forgets it after
	// NodeStaleAfterDefault.
	Stale bool `json:"stale"`
}

// StatusStaleAfter is how long a node may go unseen before Status calls it stale when it did not
// say how often it registers (NodeInfo.RegisterEvery; otherwise two of its own intervals): two of
// the default registration intervals.
const StatusStaleAfter = 2 * RegisterIntervalDefault

// Warning is a reason jobs wait that no live node will run.
type Warning struct {
	// Code is "queue_unserved" (no live node serves a queue that has waiting jobs),
	// "kind_unserved" (no live node serving the queue has a worker for a kind that waits there)
	// or "queue_paused" (a paused queue has waiting jobs).
	Code    string `json:"code"`
	Queue   string `json:"queue"`
	Kind    string `json:"kind,omitempty"`
	Message string `json:"message"`
}

// warnSample bounds the available jobs Status reads to find kinds no node runs: the oldest of
// each queue, not the whole table. A kind whose jobs all wait behind that many others is not
// named until they come forward.
const warnSample = 200

// LeaderStatus is the leader's lease as last written.
type LeaderStatus struct {
	store.Lease
	// Held is false when the lease expired and no node renewed it: nobody leads.
	Held bool `json:"held"`
	// AgeSeconds is how long the current holder has held the lease.
	AgeSeconds float64 `json:"age_seconds"`
}

// ErrNoRegistry is returned by Status for a store that records neither nodes nor leases.
var ErrNoRegistry = errors.New("store keeps no node registry or leases")

// Status reads the node registry and the leader's lease.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	reg, okReg := c.store.(store.NodeRegistry)
	leaser, okLease := c.store.(store.Leaser)
	if !okReg || !okLease {
		return nil, fmt.Errorf("rota: status: %w", ErrNoRegistry)
	}
	now, err := reg.Now(ctx)
	if err != nil {
		return nil, fmtErr("status", err)
	}
	st := &Status{Now: now, Nodes: []NodeStatus{}, Warnings: []Warning{}}
	nodes, err := reg.ListNodes(ctx)
	if err != nil {
		return nil, fmtErr("status: nodes", err)
	}
	for _, n := range nodes {
		stale := StatusStaleAfter
		if n.RegisterEvery > 0 {
			stale = 2 * n.RegisterEvery
		}
		st.Nodes = append(st.Nodes, NodeStatus{NodeInfo: n, Stale: now.Sub(n.LastSeen) > stale})
	}
	if st.Queues, err = c.store.QueueStats(ctx); err != nil {
		return nil, fmtErr("status: queues", err)
	}
	if st.Warnings, err = c.warnings(ctx, st.Nodes, st.Queues); err != nil {
		return nil, fmtErr("status: warnings", err)
	}
	lease, err := leaser.GetLease(ctx, leader.NameDefault)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return nil, fmtErr("status: leader", err)
	default:
		st.Leader = &LeaderStatus{
			Lease:      lease,
			Held:       lease.Owner != "" && !lease.ExpiresAt.Before(now),
			AgeSeconds: now.Sub(lease.AcquiredAt).Seconds(),
		}
	}
	return st, nil
}

// warnings finds waiting work no live node will run: queues none serves, kinds none of a
// queue's nodes has a worker for (from the oldest available jobs of the queue), paused queues
// with jobs waiting.
func (c *Client) warnings(ctx context.Context, nodes []NodeStatus, stats []store.QueueStats) ([]Warning, error) {
	serving := map[string][]store.NodeInfo{} // queue → its live nodes
	for _, n := range nodes {
		if !n.Stale {
			for _, q := range n.Queues {
				serving[q] = append(serving[q], n.NodeInfo)
			}
		}
	}
	out := []Warning{}
	for _, q := range stats {
		waiting := q.Counts[StateAvailable] + q.Counts[StateScheduled] + q.Counts[StateRetryable]
		if waiting == 0 {
			continue
		}
		if q.Paused {
			out = append(out, Warning{Code: "queue_paused", Queue: q.Queue,
				Message: fmt.Sprintf("queue %s is paused with %s waiting", q.Queue, jobsCount(waiting))})
			continue
		}
		live := serving[q.Queue]
		if len(live) == 0 {
			out = append(out, Warning{Code: "queue_unserved", Queue: q.Queue,
				Message: fmt.Sprintf("no live node serves queue %s, with %s waiting", q.Queue, jobsCount(waiting))})
			continue
		}
		if q.Counts[StateAvailable] == 0 {
			continue
		}
		jobs, err := c.store.List(ctx, store.ListParams{Queue: q.Queue, States: []State{StateAvailable}, Limit: warnSample})
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for _, j := range jobs {
			if seen[j.Kind] {
				continue
			}
			seen[j.Kind] = true
			if !anyRuns(live, j.Kind) {
				out = append(out, Warning{Code: "kind_unserved", Queue: q.Queue, Kind: j.Kind,
					Message: fmt.Sprintf("no live node serving queue %s has a worker for kind %s, whose jobs wait there", q.Queue, j.Kind)})
			}
		}
	}
	return out, nil
}

// anyRuns reports whether one of nodes has a worker for kind.
func anyRuns(nodes []store.NodeInfo, kind string) bool {
	for _, n := range nodes {
		if slices.Contains(n.Kinds, kind) {
			return true
		}
	}
	return false
}

// jobsCount is n jobs, in words: "1 job", "3 jobs".
func jobsCount(n int64) string {
	if n == 1 {
		return "1 job"
	}
	return fmt.Sprintf("%d jobs", n)
}
