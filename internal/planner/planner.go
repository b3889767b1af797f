// Package planner turns stored cron schedules into jobs, on the leader.
//
// Each pass reads every schedule and enqueues the occurrences that fall within a short horizon as
// scheduled jobs, moving the schedule's LastPlanned forward in the same transaction with a
// compare-and-set (store.Scheduler.PlanSchedule). That makes each occurrence planned exactly once
// however leadership moves: a new leader starts from the stored LastPlanned, and a deposed leader
// that plans late loses the compare and inserts nothing. Jobs are due at their occurrence time and
// the claim takes due scheduled jobs directly, so a planned occurrence starts on time.
//
// Occurrences that passed unplanned (every node was down) follow the schedule's missed policy:
// run-once enqueues one job now for all of them; skip drops them. Never a burst of every run.
// Occurrences that passed less than two pass intervals ago (LateGrace at least) were late, not
// missed: a schedule created or
// given a new timing just before an occurrence is first planned up to a pass later. They give the
// one job now under either policy.
package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rotahq/rota/cron"
	"github.com/rotahq/rota/store"
)

// Defaults. The horizon is several intervals long, so one or two failed passes still leave every
// occurrence planned before it is due.
const (
	HorizonDefault  = time.Minute
	IntervalDefault = 10 * time.Second
	// BatchMax caps the occurrences planned per schedule per pass: an "@every 1s" schedule plans
	// one horizon ahead, not an unbounded backlog.
	BatchMax = 100
	// LateGrace is how long after the first occurrence a pass finds unplanned that occurrence still
	// counts as late rather than missed: two intervals, the wait for the first pass after a
	// schedule is stored plus one failed pass.
	LateGrace = 2 * IntervalDefault
)

// MetadataOccurrence is the metadata key holding the occurrence a job was planned for.
const MetadataOccurrence = "cron_occurrence"

// Store is what the planner needs: schedules and job inserts.
type Store interface {
	store.Scheduler
}

// Planner plans the occurrences of every schedule in a store.
type Planner struct {
	Store   Store
	Clock   clockwork.Clock
	Logger  *slog.Logger
	Horizon time.Duration
	// Interval is how often Pass runs, IntervalDefault when zero: an occurrence a pass finds
	// unplanned within two intervals of it (LateGrace when longer) was late, not missed.
	Interval time.Duration
}

// Pass plans every schedule once and returns how many occurrences it planned, and the errors of
// the schedules it could not plan: one bad schedule does not stop the others. The caller reports
// them (the node emits them as events, which it logs).
func (p *Planner) Pass(ctx context.Context) (int, error) {
	schedules, err := p.Store.ListSchedules(ctx)
	if err != nil {
		return 0, fmt.Errorf("cron: listing schedules: %w", err)
	}
	planned := 0
	var errs []error
	for _, s := range schedules {
		if s.Paused {
			continue
		}
		n, err := p.plan(ctx, s)
		if err != nil {
			errs = append(errs, fmt.Errorf("cron: planning %s: %w", s.Name, err))
		}
		planned += n
	}
	return planned, errors.Join(errs...)
}

// plan plans one schedule and returns how many occurrences it enqueued.
func (p *Planner) plan(ctx context.Context, s store.Schedule) (int, error) {
	sched, err := cron.Parse(s.Expr, s.Zone)
	if err != nil {
		return 0, fmt.Errorf("stored schedule does not parse: %w", err)
	}
	now := p.Clock.Now()
	horizon := p.Horizon
	if horizon <= 0 {
		horizon = HorizonDefault
	}
	base := s.LastPlanned
	if base.IsZero() {
		base = s.CreatedAt
	}
	var (
		jobs []store.InsertParams
		to   time.Time
	)
	// Occurrences already due were late or missed: no planner enqueued them ahead of time.
	next := sched.Next(base)
	if !next.IsZero() && !next.After(now) {
		latest := lastMissed(sched, base, now)
		late := now.Sub(next) < max(LateGrace, 2*p.Interval)
		if late || s.Missed != store.MissedSkip {
			jobs = append(jobs, p.job(s, latest, now))
		}
		if !late {
			p.Logger.Info("rota: cron: occurrences missed while no leader planned", "schedule", s.Name, "latest", latest, "policy", s.Missed)
		}
		to, next = latest, sched.Next(latest)
	}
	for ; !next.IsZero() && !next.After(now.Add(horizon)) && len(jobs) < BatchMax; next = sched.Next(next) {
		job := p.job(s, next, next)
		// A planned occurrence that could not start before the next one is due (every node was
		// down) expires instead of running late: the missed policy, applied by the catch-up job
		// above, decides what happens to missed runs, not the leftovers of an old plan.
		job.ExpiresAt = sched.Next(next)
		jobs = append(jobs, job)
		to = next
	}
	if to.IsZero() {
		return 0, nil
	}
	planned, err := p.Store.PlanSchedule(ctx, s.Name, s.LastPlanned, to, jobs)
	if err != nil {
		return 0, err
	}
	if !planned {
		p.Logger.Info("rota: cron: schedule was planned by another node or changed meanwhile", "schedule", s.Name)
		return 0, nil
	}
	return len(jobs), nil
}

// lastMissed returns the last occurrence in (base, now], of which there is at least one. Walking
// from base would cost one Next per missed occurrence: thirty million for a schedule firing every
// second that was paused for a year, in one pass of the leader. It walks back from now instead,
// through windows that double until one holds an occurrence, so the walk costs about the
// occurrences of twice the gap before the last one.
func lastMissed(sched *cron.Schedule, base, now time.Time) time.Time {
	span := now.Sub(base)
	for w := time.Second; ; w *= 2 {
		from := now.Add(-w)
		if w > span/2 { // near base: walk from it (which also keeps w from overflowing)
			from = base
		}
		var last time.Time
		for next := sched.Next(from); !next.IsZero() && !next.After(now); next = sched.Next(next) {
			last = next
		}
		if !last.IsZero() || from.Equal(base) {
			return last
		}
	}
}

// job builds the job for one occurrence, due at runAt (the occurrence, or now for a catch-up).
func (p *Planner) job(s store.Schedule, occurrence, runAt time.Time) store.InsertParams {
	meta, _ := json.Marshal(map[string]string{MetadataOccurrence: occurrence.UTC().Format(time.RFC3339)})
	return store.InsertParams{
		Kind:        s.Kind,
		Queue:       s.Queue,
		Args:        s.Args,
		Priority:    s.Priority,
		MaxAttempts: s.MaxAttempts,
		RunAt:       runAt,
		UniqueKey:   "cron:" + s.Name + "@" + strconv.FormatInt(occurrence.Unix(), 10),
		// A cancelled occurrence (the schedule was edited) must not block the same instant under
		// the new timing; any other job for it means it is planned.
		UniqueStates: []store.State{store.StateScheduled, store.StateAvailable, store.StateRunning, store.StateRetryable, store.StateCompleted},
		Schedule:     s.Name,
		Tags:         s.Tags,
		Metadata:     meta,
	}
}
