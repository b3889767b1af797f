package rota

import (
	"context"
	"fmt"
	"time"

	"github.com/rotahq/rota/cron"
	"github.com/rotahq/rota/store"
)

// MissedPolicy says what a schedule does about occurrences that passed while every node was down.
type MissedPolicy = store.MissedPolicy

// Missed policies.
const (
	MissedRunOnce = store.MissedRunOnce // one catch-up job for all missed occurrences (the default)
	MissedSkip    = store.MissedSkip    // go on with the next occurrence
)

// Schedule describes a periodic job: a cron expression in a time zone and the job to enqueue at
// each occurrence.
type Schedule struct {
	// Name identifies the schedule; upserting the same name replaces it.
	Name string
	// Expr is a cron expression: 5 fields, an optional leading seconds field, a descriptor such
	// as @daily, or "@every 90s". See package cron for the DST rule.
	Expr string
	// Zone is an IANA time zone name. Defaults to UTC.
	Zone string
	// Args are the job's args; their Kind names the worker.
	Args Args
	// Queue, Priority, MaxAttempts and Tags are taken from Opts; other fields of Opts are ignored.
	Opts *InsertOpts
	// Missed defaults to MissedRunOnce.
	Missed MissedPolicy
}

// ScheduleRow is a schedule as stored, with its next occurrences.
type ScheduleRow struct {
	store.Schedule
	// Next holds the next occurrences from now (three by default), in the schedule's zone.
	Next []time.Time `json:"next"`
}

// UpsertSchedule validates s and stores it, replacing a schedule of the same name. Changing the
// expression or zone cancels occurrences planned under the old timing that have not started.
func (c *Client) UpsertSchedule(ctx context.Context, s Schedule) (*ScheduleRow, error) {
	row, err := c.scheduleRow(s)
	if err != nil {
		return nil, fmt.Errorf("rota: schedule %q: %w", s.Name, err)
	}
	stored, err := c.store.UpsertSchedule(ctx, row)
	if err != nil {
		return nil, fmt.Errorf("rota: schedule %q: %w", s.Name, err)
	}
	return c.withNext(stored), nil
}

func (c *Client) scheduleRow(s Schedule) (store.Schedule, error) {
	if err := validName("schedule name", s.Name); err != nil {
		return store.Schedule{}, err
	}
	if s.Zone == "" {
		s.Zone = "UTC"
	}
	parsed, err := cron.Parse(s.Expr, s.Zone)
	if err != nil {
		return store.Schedule{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if s.Missed == "" {
		s.Missed = MissedRunOnce
	}
	if s.Missed != MissedRunOnce && s.Missed != MissedSkip {
		return store.Schedule{}, fmt.Errorf("%w: missed policy %q: use %q or %q", ErrInvalid, s.Missed, MissedRunOnce, MissedSkip)
	}
	var opts InsertOpts
	if s.Opts != nil {
		opts = InsertOpts{Queue: s.Opts.Queue, Priority: s.Opts.Priority, MaxAttempts: s.Opts.MaxAttempts, Tags: s.Opts.Tags}
	}
	p, err := c.params(s.Args, &opts)
	if err != nil {
		return store.Schedule{}, err
	}
	return store.Schedule{
		Name: s.Name, Expr: parsed.Expr(), Zone: parsed.Zone(), Kind: p.Kind, Queue: p.Queue, Args: p.Args,
		Priority: p.Priority, MaxAttempts: p.MaxAttempts, Tags: p.Tags, Missed: s.Missed,
	}, nil
}

// GetSchedule returns one schedule with its next three occurrences.
func (c *Client) GetSchedule(ctx context.Context, name string) (*ScheduleRow, error) {
	if !store.Storable(name) {
		return nil, fmt.Errorf("rota: schedule %q: %w", name, store.ErrNotFound)
	}
	s, err := c.store.GetSchedule(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("rota: schedule %q: %w", name, err)
	}
	return c.withNext(s), nil
}

// ListSchedules returns every schedule with its next three occurrences.
func (c *Client) ListSchedules(ctx context.Context) ([]*ScheduleRow, error) {
	list, err := c.store.ListSchedules(ctx)
	if err != nil {
		return nil, fmtErr("list schedules", err)
	}
	rows := make([]*ScheduleRow, len(list))
	for i, s := range list {
		rows[i] = c.withNext(s)
	}
	return rows, nil
}

func (c *Client) withNext(s store.Schedule) *ScheduleRow {
	row := &ScheduleRow{Schedule: s}
	if parsed, err := cron.Parse(s.Expr, s.Zone); err == nil && !s.Paused {
		row.Next = parsed.NextN(c.clock.Now(), 3)
	}
	return row
}

// DeleteSchedule removes a schedule and cancels its occurrences that have not started.
func (c *Client) DeleteSchedule(ctx context.Context, name string) error {
	if !store.Storable(name) {
		return fmt.Errorf("rota: delete schedule %q: %w", name, store.ErrNotFound)
	}
	if err := c.store.DeleteSchedule(ctx, name); err != nil {
		return fmt.Errorf("rota: delete schedule %q: %w", name, err)
	}
	return nil
}

// PauseSchedule stops planning new occurrences of a schedule until ResumeSchedule. Occurrences
// already planned still run; cancel them to stop them.
func (c *Client) PauseSchedule(ctx context.Context, name string) error {
	return c.setSchedulePaused(ctx, name, true)
}

// ResumeSchedule plans a paused schedule again; occurrences missed meanwhile follow its missed
// policy.
func (c *Client) ResumeSchedule(ctx context.Context, name string) error {
	return c.setSchedulePaused(ctx, name, false)
}

func (c *Client) setSchedulePaused(ctx context.Context, name string, paused bool) error {
	if !store.Storable(name) {
		return fmt.Errorf("rota: schedule %q: %w", name, store.ErrNotFound)
	}
	if err := c.store.SetSchedulePaused(ctx, name, paused); err != nil {
		return fmt.Errorf("rota: schedule %q: %w", name, err)
	}
	return nil
}
