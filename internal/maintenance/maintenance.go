// Package maintenance holds the services that keep a store in order while nodes work: each a
// pass that runs at once and then every interval, on every node (rescuer, registry, stats) or
// on the leader only (pruner, cron planner, tidier). Each service names the few store calls it
// makes, so that what it may touch shows in its type, and the Runner reports every pass for the
// node to turn into an event.
package maintenance

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"
)

// Service is one maintenance service.
type Service struct {
	Name  string
	Every time.Duration
	// Pass does the service's work once and says how much it did (jobs rescued, jobs pruned,
	// occurrences planned, rows written).
	Pass func(ctx context.Context) (int, error)
	// Last, if set, runs once when the service stops, on a context of its own: what must still
	// reach the store from a stopping node (its deregistration, its last counts).
	Last func(ctx context.Context)
}

// Run is one pass of a service, as the Runner reports it.
type Run struct {
	Service  string
	Count    int
	Duration time.Duration
	Err      error
}

// Failed is how services report a failed store call: op names the call (as store.error events
// name it). ctx is the pass's, so that calls cut short by a stop can be told apart.
type Failed func(ctx context.Context, op string, err error)

// lastTimeout bounds a Last: a stopping node waits no longer for a store that does not answer.
const lastTimeout = 5 * time.Second

// Runner runs services and reports their passes.
type Runner struct {
	Clock clockwork.Clock
	// Report is called after every pass, unless the pass was cut short by its context ending
	// (the node stopping, leadership ending): that is no news.
	Report func(Run)
}

// Once runs one pass of s and reports it.
func (r Runner) Once(ctx context.Context, s Service) {
	start := r.Clock.Now()
	count, err := s.Pass(ctx)
	if err != nil && ctx.Err() != nil {
		return
	}
	if r.Report != nil {
		r.Report(Run{Service: s.Name, Count: count, Duration: r.Clock.Since(start), Err: err})
	}
}

// Loop runs s at once and then every s.Every until ctx ends, then s.Last.
func (r Runner) Loop(ctx context.Context, s Service) {
	tick := r.Clock.NewTicker(s.Every)
	defer tick.Stop()
	for {
		r.Once(ctx, s)
		select {
		case <-ctx.Done():
			if s.Last != nil {
				lctx, cancel := context.WithTimeout(context.Background(), lastTimeout)
				defer cancel()
				s.Last(lctx)
			}
			return
		case <-tick.Chan():
		}
	}
}
