package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/plancheck"
)

// A schedule is the hash sch:<name> (n name, e expr, zn zone, k kind, q queue, A args,
// p priority, m max attempts, T tags, mi missed, pa paused, lp last planned ("" before the
// first), c created, u updated); schs lists the names.

// UpsertSchedule creates or replaces a schedule in one script, which also cancels the jobs it
// planned that have not started when the timing changes.
func (s *Store) UpsertSchedule(ctx context.Context, sc store.Schedule) (store.Schedule, error) {
	tags := ""
	if len(sc.Tags) > 0 {
		b, _ := json.Marshal(sc.Tags)
		tags = string(b)
	}
	paused := "0"
	if sc.Paused {
		paused = "1"
	}
	v, err := s.run(ctx, scriptSchedUpsert, sc.Name, sc.Expr, sc.Zone, sc.Kind, sc.Queue, string(sc.Args),
		sc.Priority, sc.MaxAttempts, tags, string(sc.Missed), paused, jsonText(store.ScheduleChangedError(sc.Name)))
	if err != nil {
		return store.Schedule{}, err
	}
	got, err := decodeSchedule(v)
	if err != nil {
		return store.Schedule{}, fmt.Errorf("redis: upsert schedule: %w", err)
	}
	return got, nil
}

// GetSchedule returns one schedule, or store.ErrNotFound.
func (s *Store) GetSchedule(ctx context.Context, name string) (store.Schedule, error) {
	if name == "" { // the script lists every schedule for ""
		return store.Schedule{}, fmt.Errorf("redis: get schedule %q: %w", name, store.ErrNotFound)
	}
	list, err := s.schedules(ctx, name)
	if err != nil {
		return store.Schedule{}, err
	}
	if len(list) == 0 {
		return store.Schedule{}, fmt.Errorf("redis: get schedule %q: %w", name, store.ErrNotFound)
	}
	return list[0], nil
}

// ListSchedules returns every schedule by name, in byte order (the schs zset's order).
func (s *Store) ListSchedules(ctx context.Context) ([]store.Schedule, error) {
	return s.schedules(ctx, "")
}

func (s *Store) schedules(ctx context.Context, name string) ([]store.Schedule, error) {
	v, err := s.run(ctx, scriptSchedGet, name)
	if err != nil {
		return nil, err
	}
	list, _ := v.([]any)
	var out []store.Schedule
	for _, x := range list {
		if h, _ := x.([]any); len(h) == 0 {
			continue
		}
		sc, err := decodeSchedule(x)
		if err != nil {
			return nil, fmt.Errorf("redis: schedules: %w", err)
		}
		out = append(out, sc)
	}
	return out, nil
}

// DeleteSchedule removes a schedule and cancels the jobs it planned that have not started.
func (s *Store) DeleteSchedule(ctx context.Context, name string) error {
	v, err := s.run(ctx, scriptSchedDelete, name, jsonText(store.ScheduleRemovedError(name)))
	if err != nil {
		return err
	}
	if toStr(v) == "NOTFOUND" {
		return fmt.Errorf("redis: delete schedule %q: %w", name, store.ErrNotFound)
	}
	return nil
}

// SetSchedulePaused pauses or resumes a schedule.
func (s *Store) SetSchedulePaused(ctx context.Context, name string, paused bool) error {
	flag := "0"
	if paused {
		flag = "1"
	}
	v, err := s.run(ctx, scriptSchedPause, name, flag)
	if err != nil {
		return err
	}
	if toStr(v) == "NOTFOUND" {
		return fmt.Errorf("redis: pause schedule %q: %w", name, store.ErrNotFound)
	}
	return nil
}

// PlanSchedule moves LastPlanned from `from` to `to` and inserts jobs, in one script, if and only
// if LastPlanned still equals from, to the microsecond.
func (s *Store) PlanSchedule(ctx context.Context, name string, from, to time.Time, jobs []store.InsertParams) (bool, error) {
	if err := plancheck.Check(name, jobs); err != nil {
		return false, fmt.Errorf("redis: plan schedule %q: %w", name, err)
	}
	args := appendJobs([]any{s.origin, name, microsOrEmpty(from), micros(to), len(jobs)}, jobs)
	v, err := s.run(ctx, scriptPlan, args...)
	if err != nil {
		return false, err
	}
	planned := toInt(v) == 1
	if planned {
		var queues []store.InsertResult
		for _, p := range jobs {
			if p.RunAt.IsZero() || !p.RunAt.After(s.localNow()) {
				queues = append(queues, store.InsertResult{Job: &store.JobRow{Queue: p.Queue, State: store.StateAvailable}})
			}
		}
		s.announceLocally(queues)
	}
	return planned, nil
}

// localNow is this process's idea of the store's time, for guesses only (which queues to wake).
func (s *Store) localNow() time.Time {
	if s.cfg.clock == nil {
		return time.Now()
	}
	return s.cfg.clock.Now()
}

func decodeSchedule(v any) (store.Schedule, error) {
	m, err := fields(v)
	if err != nil {
		return store.Schedule{}, err
	}
	prio, _ := strconv.Atoi(m["p"])
	maxAttempts, _ := strconv.Atoi(m["m"])
	sc := store.Schedule{
		Name: m["n"], Expr: m["e"], Zone: m["zn"], Kind: m["k"], Queue: m["q"], Args: []byte(m["A"]),
		Priority: prio, MaxAttempts: maxAttempts, Missed: store.MissedPolicy(m["mi"]), Paused: m["pa"] == "1",
	}
	if t := m["T"]; t != "" {
		if err := json.Unmarshal([]byte(t), &sc.Tags); err != nil {
			return store.Schedule{}, fmt.Errorf("schedule %s: tags: %w", sc.Name, err)
		}
	}
	for k, dst := range map[string]*time.Time{"lp": &sc.LastPlanned, "c": &sc.CreatedAt, "u": &sc.UpdatedAt} {
		if *dst, err = fromMicros(m[k]); err != nil {
			return store.Schedule{}, fmt.Errorf("schedule %s: %w", sc.Name, err)
		}
	}
	return sc, nil
}
