package store

import (
	"context"
	"fmt"
	"math"
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
//
// Running means in state running: a job whose lease expired still counts until it is rescued,
// since its node may still be running it. Lowering MaxRunning below the number running stops
// nothing; claims of that queue or kind take nothing until fewer run.
//
// A start is a claim of a job. Every claim counts, however its attempt ends: completed, failed,
// snoozed or handed back with its attempt refunded, rescued. A rate limit protects what the
// handler calls, and a handler that snoozed may already have called it. The store records
// starts apart from the jobs, so a retried job counts once per claim (a job's AttemptedAt shows
// only its last) and starts still count after the job is deleted or pruned. A start at t counts
// against the claims made in [t, t+Period): the window slides, it is not cut into fixed buckets.
// A rate limit counts the starts made while it has a Rate: a new one, or one given a Rate again,
// begins with an empty window. The store keeps the starts of the last Period only, so a Period
// made longer counts, at first, only the starts within the old one.
//
// A limit applies to the claims that begin after SetLimit returns; running jobs are not touched.
type Limit struct {
	Scope LimitScope `json:"scope"`
	Name  string     `json:"name"`
	// MaxRunning caps the jobs running at once; 1 means exactly one fleet-wide. 0: no cap.
	MaxRunning int `json:"max_running,omitempty"`
	// Rate caps starts to Rate per Period, over a sliding window. 0: no rate limit. Period is
	// kept to the microsecond.
	Rate   int           `json:"rate,omitempty"`
	Period time.Duration `json:"period,omitempty"`
}

// LimitUsage is a limit with what counts against it now, as a claim counts it.
type LimitUsage struct {
	Limit
	// Running is the number of jobs of the queue or kind running now (counted when MaxRunning
	// > 0).
	Running int `json:"running"`
	// Started is the number of starts within the last Period (counted when Rate > 0).
	Started int `json:"started"`
}

// Allowance is how many more jobs the limit lets start now: math.MaxInt for a limit without
// MaxRunning or Rate.
func (u LimitUsage) Allowance() int {
	n := math.MaxInt
	if u.MaxRunning > 0 {
		n = min(n, u.MaxRunning-u.Running)
	}
	if u.Rate > 0 {
		n = min(n, u.Rate-u.Started)
	}
	return max(n, 0)
}

// Limiter stores limits. Claim honours every stored limit: it never makes the number of running
// jobs of a limited queue or kind exceed MaxRunning, and never starts more than Rate of them within
// any window of Period. A claim that a limit holds back takes fewer jobs, possibly none; the jobs
// it leaves wait for a later claim, and jobs a limit holds back do not block the claimable jobs
// behind them in claim order. Where a queue limit and a kind limit both apply, both hold.
type Limiter interface {
	// SetLimit creates or replaces the limit for (Scope, Name). A limit with neither MaxRunning
	// nor Rate removes it. A limit that fails Validate is refused with ErrInvalidLimit.
	SetLimit(ctx context.Context, l Limit) error
	// ListLimits returns every limit, by scope then name.
	ListLimits(ctx context.Context) ([]Limit, error)
	// LimitUsage returns the limits that a claim of kind in queue is held to (the queue's and
	// the kind's, those that exist), the queue's first, each with what counts against it now.
	// It reads, as a claim would count, and writes nothing: producers ask it whether optional
	// work is worth adding (DropIfBusy).
	LimitUsage(ctx context.Context, queue, kind string) ([]LimitUsage, error)
}

// Removes reports whether setting l removes the limit of its scope and name.
func (l Limit) Removes() bool { return l.MaxRunning == 0 && l.Rate == 0 }

// Validate reports what is wrong with l, as an error wrapping ErrInvalidLimit. The zero values
// of MaxRunning and Rate are valid: they mean no cap.
func (l Limit) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s %q: %s", ErrInvalidLimit, l.Scope, l.Name, fmt.Sprintf(format, args...))
	}
	switch {
	case l.Scope != LimitQueue && l.Scope != LimitKind:
		return bad("scope must be %q or %q", LimitQueue, LimitKind)
	case l.Name == "":
		return bad("empty name")
	case l.MaxRunning < 0:
		return bad("negative MaxRunning %d", l.MaxRunning)
	case l.Rate < 0:
		return bad("negative Rate %d", l.Rate)
	case l.Period < 0:
		return bad("negative Period %v", l.Period)
	case l.Rate > 0 && l.Period < time.Microsecond:
		return bad("Rate %d needs a Period of a microsecond or more", l.Rate)
	case l.Rate == 0 && l.Period != 0:
		return bad("Period %v without a Rate", l.Period)
	}
	return nil
}
