package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/plancheck"
)

// Schedules. Every write of a schedule runs in the writer's transaction, which holds the file's
// write lock for every process on it. So PlanSchedule's compare of last_planned, its update and
// its inserts happen with no other planner, edit or removal in between: of two planners with the
// same `from` the second finds last_planned moved and inserts nothing, and an edit that cancels a
// schedule's waiting jobs sees every job planned before it, while no planner that read the old
// timing can plan after it.

var _ store.Scheduler = (*Store)(nil)

const scheduleColumns = `name, expr, zone, kind, queue, args, priority, max_attempts, tags, missed,
	paused, last_planned, created_at, updated_at`

// UpsertSchedule creates or replaces sc.Name. A new schedule takes Paused from sc; a replaced one
// keeps its own Paused and LastPlanned, unless its timing changed: then its waiting jobs are
// cancelled and LastPlanned becomes now.
func (s *Store) UpsertSchedule(ctx context.Context, sc store.Schedule) (store.Schedule, error) {
	var out store.Schedule
	err := s.write(ctx, func(t *wtx) error {
		now := micros(t.now)
		old, err := readSchedule(t, sc.Name)
		paused, lastPlanned, created := sc.Paused, any(nil), now
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err
		default:
			paused, lastPlanned, created = old.Paused, nullMicros(old.LastPlanned), micros(old.CreatedAt)
			if old.Expr != sc.Expr || old.Zone != sc.Zone {
				lastPlanned = now
				if err := cancelPlanned(t, sc.Name, store.ScheduleChangedError(sc.Name)); err != nil {
					return err
				}
			}
		}
		var tags any
		if len(sc.Tags) > 0 {
			tags = jsonText(sc.Tags)
		}
		rows, err := t.query(`INSERT OR REPLACE INTO schedules (`+scheduleColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			RETURNING `+scheduleColumns,
			sc.Name, sc.Expr, sc.Zone, sc.Kind, sc.Queue, string(sc.Args), sc.Priority, sc.MaxAttempts,
			tags, string(sc.Missed), paused, lastPlanned, created, now)
		if err != nil {
			return err
		}
		got, err := scanSchedules(rows)
		if err == nil && len(got) != 1 {
			err = fmt.Errorf("upsert returned %d schedules", len(got))
		}
		if err != nil {
			return err
		}
		out = got[0]
		return nil
	})
	if err != nil {
		return store.Schedule{}, fmt.Errorf("sqlite: upsert schedule %s: %w", sc.Name, err)
	}
	return out, nil
}

// readSchedule reads a schedule inside the writer's transaction.
func readSchedule(t *wtx, name string) (store.Schedule, error) {
	rows, err := t.query(`SELECT `+scheduleColumns+` FROM schedules WHERE name = ?`, name)
	if err != nil {
		return store.Schedule{}, err
	}
	got, err := scanSchedules(rows)
	if err != nil {
		return store.Schedule{}, err
	}
	if len(got) == 0 {
		return store.Schedule{}, store.ErrNotFound
	}
	return got[0], nil
}

// inScheduleIndex is the predicate of jobs_schedule, which a statement must name word for word
// for SQLite to use the partial index.
const inScheduleIndex = `state IN ('scheduled', 'available') AND schedule IS NOT NULL`

// cancelPlanned cancels the jobs schedule name planned that have not started — scheduled, or due
// (a claim promoted them) and never attempted, in whichever queue — noting why in their errors as
// an attempt's error would be. Both are found through jobs_schedule.
func cancelPlanned(t *wtx, name, why string) error {
	c := make(counts)
	var ends []ended
	for _, step := range []struct {
		from  store.State
		query string
	}{
		{store.StateScheduled, `UPDATE jobs INDEXED BY jobs_schedule SET state = 'cancelled', finalized_at = ?1,
			errors = json_insert(coalesce(errors, '[]'), '$[#]', json_object('attempt', attempt, 'at', ?2, 'error', ?3))
		WHERE schedule = ?4 AND ` + inScheduleIndex + ` AND state = 'scheduled'
		RETURNING id, queue, has_dependents`},
		{store.StateAvailable, `UPDATE jobs INDEXED BY jobs_schedule SET state = 'cancelled', finalized_at = ?1,
			errors = json_insert(coalesce(errors, '[]'), '$[#]', json_object('attempt', attempt, 'at', ?2, 'error', ?3))
		WHERE schedule = ?4 AND ` + inScheduleIndex + ` AND state = 'available' AND attempted_at IS NULL
		RETURNING id, queue, has_dependents`},
	} {
		rows, err := t.query(step.query, micros(t.now), truncate(t.now).Format(time.RFC3339Nano), why, name)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var q string
			var dependents bool
			if err := rows.Scan(&id, &q, &dependents); err != nil {
				rows.Close()
				return err
			}
			c.move(q, step.from, store.StateCancelled, 1)
			t.notify(store.Notification{Topic: store.TopicFinal, Queue: q, JobID: id})
			if dependents {
				ends = append(ends, ended{id: id, state: store.StateCancelled})
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
	}
	if err := c.flush(t); err != nil {
		return err
	}
	return resolveIn(t, ends...)
}

// GetSchedule returns one schedule, or store.ErrNotFound.
func (s *Store) GetSchedule(ctx context.Context, name string) (store.Schedule, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+scheduleColumns+` FROM schedules WHERE name = ?`, name)
	if err != nil {
		return store.Schedule{}, fmt.Errorf("sqlite: get schedule %s: %w", name, err)
	}
	got, err := scanSchedules(rows)
	if err == nil && len(got) == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Schedule{}, fmt.Errorf("sqlite: get schedule %s: %w", name, err)
	}
	return got[0], nil
}

// ListSchedules returns every schedule by name, in byte order.
func (s *Store) ListSchedules(ctx context.Context) ([]store.Schedule, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+scheduleColumns+` FROM schedules ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list schedules: %w", err)
	}
	got, err := scanSchedules(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list schedules: %w", err)
	}
	return got, nil
}

// DeleteSchedule removes a schedule and cancels its jobs that have not started.
func (s *Store) DeleteSchedule(ctx context.Context, name string) error {
	err := s.write(ctx, func(t *wtx) error {
		if _, err := readSchedule(t, name); err != nil {
			return err
		}
		if _, err := t.exec(`DELETE FROM schedules WHERE name = ?`, name); err != nil {
			return err
		}
		return cancelPlanned(t, name, store.ScheduleRemovedError(name))
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete schedule %s: %w", name, err)
	}
	return nil
}

// SetSchedulePaused pauses or resumes a schedule.
func (s *Store) SetSchedulePaused(ctx context.Context, name string, paused bool) error {
	err := s.write(ctx, func(t *wtx) error {
		res, err := t.exec(`UPDATE schedules SET paused = ? WHERE name = ?`, paused, name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(err, store.ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: pause schedule %s: %w", name, err)
	}
	return nil
}

// PlanSchedule moves last_planned from `from` to `to` and inserts jobs, in one request of the
// writer, if last_planned still is `from` (IS: NULL, never planned, matches the zero time). The
// jobs go through the insert path every insert takes, unique keys and counts included.
func (s *Store) PlanSchedule(ctx context.Context, name string, from, to time.Time, jobs []store.InsertParams) (bool, error) {
	if err := plancheck.Check(name, jobs); err != nil {
		return false, fmt.Errorf("sqlite: plan schedule %s: %w", name, err)
	}
	var planned bool
	err := s.write(ctx, func(t *wtx) error {
		planned = false
		res, err := t.exec(`UPDATE schedules SET last_planned = ? WHERE name = ? AND last_planned IS ?`,
			nullMicros(to), name, nullMicros(from))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		if len(jobs) > 0 {
			_, notes, err := insertJobs(t, t.now, jobs)
			if err != nil {
				return err
			}
			t.notify(notes...)
		}
		planned = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("sqlite: plan schedule %s: %w", name, err)
	}
	return planned, nil
}

// scanSchedules reads every row of scheduleColumns and closes rows.
func scanSchedules(rows *sql.Rows) ([]store.Schedule, error) {
	defer rows.Close()
	var out []store.Schedule
	for rows.Next() {
		var (
			sc                   store.Schedule
			args, missed         string
			tags                 sql.NullString
			lastPlanned          sql.NullInt64
			createdAt, updatedAt int64
		)
		if err := rows.Scan(&sc.Name, &sc.Expr, &sc.Zone, &sc.Kind, &sc.Queue, &args, &sc.Priority,
			&sc.MaxAttempts, &tags, &missed, &sc.Paused, &lastPlanned, &createdAt, &updatedAt); err != nil {
			return nil, err
		}
		sc.Args, sc.Missed = json.RawMessage(args), store.MissedPolicy(missed)
		if tags.Valid {
			if err := json.Unmarshal([]byte(tags.String), &sc.Tags); err != nil {
				return nil, fmt.Errorf("schedule %s: tags: %w", sc.Name, err)
			}
		}
		if lastPlanned.Valid {
			sc.LastPlanned = fromMicros(lastPlanned.Int64)
		}
		sc.CreatedAt, sc.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
		out = append(out, sc)
	}
	return out, rows.Err()
}
