package rota

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rotahq/rota/internal/leader"
	"github.com/rotahq/rota/store"
)

// Status is who serves a store: the nodes that registered and the leader's lease.
type Status struct {
	// Now is the store's time, which Leader and the nodes' times are relative to.
	Now time.Time `json:"now"`
	// Leader is nil when no node ever led.
	Leader *LeaderStatus    `json:"leader"`
	Nodes  []store.NodeInfo `json:"nodes"`
}

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
	st := &Status{Now: now}
	if st.Nodes, err = reg.ListNodes(ctx); err != nil {
		return nil, fmtErr("status: nodes", err)
	}
	if st.Nodes == nil {
		st.Nodes = []store.NodeInfo{}
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
