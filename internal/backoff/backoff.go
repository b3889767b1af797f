// Package backoff computes how long to wait after a failure: exponential growth with full jitter
// on the upper half, capped, so a burst of failures spreads out instead of retrying in lockstep.
// It is rota's one retry schedule: the runtime spaces a failed job's attempts with it (Default,
// or a kind's own policy), the completer its retries of a store write that failed, and the
// stores their notification listeners' retries (PostgreSQL's reconnects of its LISTEN
// connection, SQLite's re-reads of the file's change counter). Each loop counts its own failures
// and asks Delay.
package backoff

import (
	"math"
	"math/rand/v2"
	"time"
)

const (
	// BaseDefault is the delay before the first retry, before jitter.
	BaseDefault = time.Second
	// MaxDefault caps every delay. One day keeps a job with 25 attempts alive for about three
	// weeks, long enough for a person to notice and fix what it depends on.
	MaxDefault = 24 * time.Hour
)

// Policy is an exponential backoff: Base·2^(attempt-1), capped at Max, then jittered into
// [d/2, d) so the expected delay still doubles.
type Policy struct {
	Base time.Duration
	Max  time.Duration
}

// Default is the policy used unless a kind sets its own: 1 s, 2 s, 4 s, … capped at a day.
var Default = Policy{Base: BaseDefault, Max: MaxDefault}

// Delay returns how long to wait after the given failed attempt (1 for the first): after the
// n-th failure in a row of a retry loop.
func (p Policy) Delay(attempt int) time.Duration {
	return p.jittered(attempt, rand.Float64())
}

func (p Policy) jittered(attempt int, r float64) time.Duration {
	base, limit := p.Base, p.Max
	if base <= 0 {
		base = BaseDefault
	}
	if limit <= 0 {
		limit = MaxDefault
	}
	if attempt < 1 {
		attempt = 1
	}
	// Compute in float64: 2^attempt overflows int64 nanoseconds from attempt 34 on.
	d := float64(base) * math.Pow(2, float64(attempt-1))
	if d > float64(limit) || math.IsInf(d, 0) {
		d = float64(limit)
	}
	return time.Duration(d/2 + r*d/2)
}
