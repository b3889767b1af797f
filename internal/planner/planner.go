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
package planner

import (
	"context"
	"encoding/json"
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
}

// Pass plans every schedule once. Errors are logged per schedule; one bad schedule does not stop
// the others.
func (p *Planner) Pass(ctx context.Context) {
	schedules, err := p.Store.ListSchedules(ctx)
	if err != nil {
		p.Logger.Warn("rota: cron: listing schedules failed", "error", err)
		return
	}
	for _, s := range schedules {
		if s.Paused {
			continue
		}
		if err := p.plan(ctx, s); err != nil {
			p.Logger.Warn("rota: cron: planning failed", "schedule", s.Name, "error", err)
		}
	}
}

func (p *Planner) plan(ctx context.Context, s store.Schedule) error {
	sched, err := cron.Parse(s.Expr, s.Zone)
	if err != nil {
		return fmt.Errorf("stored schedule does not parse: %w", err)
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
	// Occurrences already due were missed: no planner enqueued them ahead of time.
	var missed []time.Time
	next := sched.Next(base)
	for !next.IsZero() && !next.After(now) {
		missed = append(missed, next)
		to = next
		if len(missed) > 1 {
			missed = missed[len(missed)-1:] // only the latest matters; don't hold a long list
		}
		next = sched.Next(next)
	}
	if len(missed) > 0 && s.Missed != store.MissedSkip {
		jobs = append(jobs, p.job(s, missed[0], now))
	}
	if len(missed) > 0 {
		p.Logger.Info("rota: cron: occurrences missed while no leader planned", "schedule", s.Name, "latest", missed[0], "policy", s.Missed)
	}
	for ; !next.IsZero() && !next.After(now.Add(horizon)) && len(jobs) < BatchMax; next = sched.Next(next) {
		jobs = append(jobs, p.job(s, next, next))
		to = next
	}
	if to.IsZero() {
		return nil
	}
	planned, err := p.Store.PlanSchedule(ctx, s.Name, s.LastPlanned, to, jobs)
	if err != nil {
		return err
	}
	if !planned {
		p.Logger.Info("rota: cron: schedule was planned by another node or changed meanwhile", "schedule", s.Name)
	}
	return nil
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
