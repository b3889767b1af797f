package planner

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rotahq/rota/cron"
	"github.com/rotahq/rota/store"
)

// Exprs the failover tests run: a field schedule and an @every one.
var failoverExprs = map[string]string{"fields": "*/5 * * * * *", "every": "@every 10s"}

// Two nodes, each a leader now and then, plan one schedule over 200 occurrences. The clock stops
// right at occurrences, a microsecond either side of them, a planner interval on, or after a
// failover long enough for the leader's lease to expire; leadership moves at any of them; and a
// deposed leader is often still in its pass: the new leader's whole pass runs between the old
// one's read of the schedule and its plan, sometimes with the clock moving on in between. After
// every pass, every occurrence up to the horizon is planned exactly once.
func TestLeadersAlternate(t *testing.T) {
	for name, expr := range failoverExprs {
		t.Run(name, func(t *testing.T) {
			eachBackend(t, 2, func(t *testing.T, b *bundle) {
				for _, p := range alternate(b, expr, 200) {
					t.Error(p)
				}
				// The scenario must have made deposed leaders plan late, or it proved little.
				if lost := b.handles[0].lost + b.handles[1].lost; lost < 10 {
					t.Errorf("only %d plans lost the compare-and-set", lost)
				}
			})
		})
	}
}

// The failover test fails a store whose compare-and-set does not compare: it would let a
// deposed leader plan again what the new one planned.
func TestLeadersAlternateCatchesBrokenCAS(t *testing.T) {
	eachBackend(t, 2, func(t *testing.T, b *bundle) {
		for _, h := range b.handles {
			h.Scheduler = ignoreFrom{h.Scheduler}
		}
		problems := alternate(b, failoverExprs["fields"], 200)
		if len(problems) == 0 {
			t.Fatal("planners on a store without a compare-and-set passed")
		}
		t.Logf("caught: %q", problems)
	})
}

// alternate runs the failover scenario until the schedule has had n occurrences, and returns the
// problems of the first pass that has any.
func alternate(b *bundle, expr string, n int) []string {
	sc := b.upsert("s", expr, store.MissedRunOnce)
	sched, err := cron.Parse(expr, "UTC")
	if err != nil {
		b.t.Fatal(err)
	}
	end := sched.NextN(sc.CreatedAt, n)[n-1]
	rng := rand.New(rand.NewPCG(5, 42)) // fixed: a failure replays
	leader := 0
	b.pass(leader) // the schedule is planned before its first occurrence: no catch-up
	for b.clk.Now().Before(end) {
		next := sched.Next(b.clk.Now())
		switch rng.IntN(5) {
		case 0:
			b.clk.Advance(next.Sub(b.clk.Now()))
		case 1:
			b.clk.Advance(next.Sub(b.clk.Now()) - time.Microsecond)
		case 2:
			b.clk.Advance(next.Sub(b.clk.Now()) + time.Microsecond)
		case 3:
			b.clk.Advance(IntervalDefault)
		case 4: // a failover: the leader died and its lease ran out, within the horizon
			b.clk.Advance(45 * time.Second)
		}
		if rng.IntN(3) == 0 {
			leader = 1 - leader
		}
		other := 1 - leader
		switch rng.IntN(4) {
		case 0:
			b.handles[leader].beforePlan = func() { b.pass(other) }
		case 1:
			b.handles[leader].beforePlan = func() {
				b.clk.Advance(time.Second)
				b.pass(other)
			}
		}
		b.pass(leader)
		b.handles[leader].beforePlan = nil // when the pass had nothing to plan
		if problems := b.check("s", expr, sc.CreatedAt, b.clk.Now().Add(time.Minute)); len(problems) > 0 {
			return problems
		}
	}
	return nil
}

// ignoreFrom is a store whose PlanSchedule compares LastPlanned with what it has just read
// instead of with the caller's `from`: as if there were no compare-and-set.
type ignoreFrom struct{ store.Scheduler }

func (s ignoreFrom) PlanSchedule(ctx context.Context, name string, _, to time.Time, jobs []store.InsertParams) (bool, error) {
	sc, err := s.GetSchedule(ctx, name)
	if err != nil {
		return false, err
	}
	return s.Scheduler.PlanSchedule(ctx, name, sc.LastPlanned, to, jobs)
}
