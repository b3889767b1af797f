package store

import (
	"context"
	"encoding/json"
	"time"
)

// MissedPolicy says what a schedule does about occurrences that passed while no leader planned
// them (everyone was down).
type MissedPolicy string

const (
	// MissedRunOnce enqueues one catch-up job for all missed occurrences together.
	MissedRunOnce MissedPolicy = "run-once"
	// MissedSkip drops missed occurrences and goes on with the next.
	MissedSkip MissedPolicy = "skip"
)

// Schedule is a stored cron schedule: which job to enqueue, and when.
type Schedule struct {
	Name string `json:"name"`
	// Expr is a cron expression and Zone an IANA time zone; package cron parses them. Stores keep
	// them as text and never interpret them.
	Expr        string          `json:"expr"`
	Zone        string          `json:"zone"`
	Kind        string          `json:"kind"`
	Queue       string          `json:"queue"`
	Args        json.RawMessage `json:"args"`
	Priority    int             `json:"priority"`
	MaxAttempts int             `json:"max_attempts"`
	Tags        []string        `json:"tags,omitempty"`
	Missed      MissedPolicy    `json:"missed"`
	Paused      bool            `json:"paused"`
	// LastPlanned is the last occurrence the planner enqueued a job for; zero before the first.
	LastPlanned time.Time `json:"last_planned,omitzero"`
	// CreatedAt is when the schedule was first stored, UpdatedAt when UpsertSchedule last wrote
	// it; pausing and planning leave both. Both are the store's time.
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Scheduler stores schedules and lets the leader plan their occurrences exactly once.
type Scheduler interface {
	// UpsertSchedule creates or replaces the schedule s.Name and returns it as stored. Paused and
	// LastPlanned are kept from the stored schedule (use SetSchedulePaused; the planner owns
	// LastPlanned); a new schedule takes Paused from s and starts with LastPlanned zero. When the
	// timing (Expr or Zone) changes, jobs the schedule planned that have not started (scheduled,
	// or due and never attempted) are cancelled and LastPlanned becomes now, so the new timing is
	// planned from now on and nothing planned under the old one runs. Cancelled jobs are
	// announced like any cancellation, with ScheduleChangedError(s.Name) as the error of their
	// attempt (the one they never made: Attempt as it stood).
	UpsertSchedule(ctx context.Context, s Schedule) (Schedule, error)
	// GetSchedule returns one schedule, or ErrNotFound.
	GetSchedule(ctx context.Context, name string) (Schedule, error)
	// ListSchedules returns every schedule by name.
	ListSchedules(ctx context.Context) ([]Schedule, error)
	// DeleteSchedule removes a schedule and cancels its jobs that have not started (scheduled, or
	// due and never attempted), with ScheduleRemovedError(name) as their error. ErrNotFound if
	// there is none.
	DeleteSchedule(ctx context.Context, name string) error
	// SetSchedulePaused pauses or resumes a schedule. ErrNotFound if there is none.
	SetSchedulePaused(ctx context.Context, name string, paused bool) error
	// PlanSchedule inserts jobs for a schedule's occurrences and moves its LastPlanned from `from`
	// to `to`, atomically, if and only if LastPlanned still equals from (a compare-and-set:
	// of two planners, one wins and the other inserts nothing). Times are compared to the
	// microsecond, and the zero time matches a schedule never planned. The jobs are inserted as
	// Insert would insert them: a job whose unique key is held is not inserted again. Each job's
	// Schedule field must be name; a job naming another is an error. planned is false when the
	// compare failed or the schedule is gone.
	PlanSchedule(ctx context.Context, name string, from, to time.Time, jobs []InsertParams) (planned bool, err error)
}
