package store

import (
	"context"
	"time"
)

// Lease is a named, fenced lock held by one owner until it expires.
type Lease struct {
	Name  string `json:"name"`
	Owner string `json:"owner"`
	// Token grows every time the lease changes hands; a renewal by the same owner keeps it. Work
	// done under a lease carries its token so that stale holders can be told apart.
	Token      int64     `json:"token"`
	AcquiredAt time.Time `json:"acquired_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// Leaser is the lease primitive the leader elector and singleton workers stand on. Expiry is
// judged by the store's clock.
type Leaser interface {
	// AcquireLease takes the lease name for owner until now + ttl if it is free or expired, or
	// renews it if owner holds it. held is false, with the current holder's lease, when another
	// owner holds it.
	AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (lease Lease, held bool, err error)
	// ReleaseLease gives the lease up if owner holds it; otherwise it does nothing.
	ReleaseLease(ctx context.Context, name, owner string) error
	// GetLease returns the lease, or ErrNotFound when nobody ever took it. An expired lease is
	// returned as it was; compare ExpiresAt with the store's time.
	GetLease(ctx context.Context, name string) (Lease, error)
}

// NodeInfo is a node as it registers itself, so operators can see the fleet.
type NodeInfo struct {
	ID      string   `json:"id"`
	Host    string   `json:"host"`
	PID     int      `json:"pid"`
	Version string   `json:"version"`
	Queues  []string `json:"queues"`
	// Kinds are the job kinds the node has workers for.
	Kinds     []string  `json:"kinds"`
	StartedAt time.Time `json:"started_at"`
	// RegisterEvery is how often the node refreshes its row: a node unseen for two of them is
	// stale. Zero when the node did not say.
	RegisterEvery time.Duration `json:"register_every_ns,omitempty"`
	// LastSeen is set by the store, from its clock, on every RegisterNode.
	LastSeen time.Time `json:"last_seen"`
	// Running is how many jobs are running under the node's id, as the store counts them when
	// it lists the nodes (a dead node's until they are rescued). RegisterNode ignores it.
	Running int64 `json:"running"`
}

// NodeRegistry records which nodes are alive.
type NodeRegistry interface {
	// RegisterNode inserts or refreshes a node's row, stamping LastSeen with the store's time.
	RegisterNode(ctx context.Context, n NodeInfo) error
	// ListNodes returns every registered node, most recently seen first.
	ListNodes(ctx context.Context) ([]NodeInfo, error)
	// DeregisterNode removes a node that stopped cleanly.
	DeregisterNode(ctx context.Context, id string) error
	// PruneNodes removes nodes last seen before the given time and returns how many.
	PruneNodes(ctx context.Context, before time.Time) (int, error)
	// Now returns the store's time, so callers can judge lease and node ages by the clock that
	// decides them.
	Now(ctx context.Context) (time.Time, error)
}
