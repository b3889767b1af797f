package store

import (
	"context"
	"time"
)

// LimitScope says what a Limit counts.
type LimitScope string

const (
	// LimitQueue counts the jobs of one queue.
	LimitQueue LimitScope = "queue"
	// LimitKind counts the jobs of one kind, whatever their queue.
	LimitKind LimitScope = "kind"
)

// Limit caps, fleet-wide, how many jobs of a queue or kind run at once and how often they start.
// Claim enforces it in the store, so the cap holds however many nodes claim.
type Limit struct {
	Scope LimitScope `json:"scope"`
	Name  string     `json:"name"`
	// MaxRunning caps the jobs running at once; 1 means exactly one fleet-wide. 0: no cap.
	MaxRunning int `json:"max_running,omitempty"`
	// Rate caps starts to Rate per Period, over a sliding window. 0: no rate limit.
	Rate   int           `json:"rate,omitempty"`
	Period time.Duration `json:"period,omitempty"`
}

// Limiter stores limits. Claim honours every stored limit: it never makes the number of running
// jobs of a limited queue or kind exceed MaxRunning, and never starts more than Rate of them within
// any window of Period.
type Limiter interface {
	// SetLimit creates or replaces the limit for (Scope, Name). A limit with neither MaxRunning
	// nor Rate removes it.
	SetLimit(ctx context.Context, l Limit) error
	// ListLimits returns every limit, by scope then name.
	ListLimits(ctx context.Context) ([]Limit, error)
}
