package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/plancheck"
)

// Schedules. Every write of a schedule locks its row before it does anything else, so the writes
// of one schedule take turns fleet-wide. PlanSchedule's compare-and-set is an UPDATE … WHERE
// last_planned IS NOT DISTINCT FROM `from`, in the transaction that inserts the jobs: of two
// planners, the second waits for the first's row lock, then re-reads the row, finds last_planned
// moved and inserts nothing. An edit or removal cancels waiting jobs in a statement that begins
// after it holds the lock, so it sees every job planned before it; a planner that read the old
// timing and plans after it finds last_planned moved (or the row gone).

var _ store.Scheduler = (*Store)(nil)

const scheduleColumns = `name, expr, zone, kind, queue, args, priority, max_attempts, tags, missed,
	paused, last_planned, created_at, updated_at`

const createScheduleSQL = `INSERT INTO {schema}.schedules (` + scheduleColumns + `)
	VALUES ($2, $3, $4, $5, $6, $7, $8, $9, coalesce($10::text[], '{}'), $11, $12, NULL, {now}, {now})
	ON CONFLICT (name) DO NOTHING
	RETURNING ` + scheduleColumns

const replaceScheduleSQL = `UPDATE {schema}.schedules SET expr = $3, zone = $4, kind = $5,
		queue = $6, args = $7, priority = $8, max_attempts = $9, tags = coalesce($10::text[], '{}'),
		missed = $11, last_planned = CASE WHEN $12 THEN {now} ELSE last_planned END, updated_at = {now}
	WHERE name = $2
	RETURNING ` + scheduleColumns

// upsertRounds bounds UpsertSchedule's tries: a create that loses to a concurrent create of the
// same name replaces that one in its second round.
const upsertRounds = 3

// UpsertSchedule creates or replaces sc.Name. A new schedule takes Paused from sc; a replaced one
// keeps its own Paused and LastPlanned, unless its timing changed: then its waiting jobs are
// cancelled and LastPlanned becomes now.
func (s *Store) UpsertSchedule(ctx context.Context, sc store.Schedule) (store.Schedule, error) {
	var out store.Schedule
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var tags []string
		if len(sc.Tags) > 0 {
			tags = sc.Tags
		}
		for range upsertRounds {
			var expr, zone string
			err := tx.QueryRow(ctx, s.sql(`SELECT expr, zone FROM {schema}.schedules WHERE name = $1 FOR UPDATE`),
				sc.Name).Scan(&expr, &zone)
			if errors.Is(err, pgx.ErrNoRows) {
				rs, err := tx.Query(ctx, s.sql(createScheduleSQL), s.now(), sc.Name, sc.Expr, sc.Zone, sc.Kind,
					sc.Queue, jsonParam(sc.Args), sc.Priority, sc.MaxAttempts, tags, string(sc.Missed), sc.Paused)
				if err != nil {
					return err
				}
				got, err := scanSchedules(rs)
				if err != nil {
					return err
				}
				if len(got) == 0 { // a concurrent create won: replace its schedule
					continue
				}
				out = got[0]
				return nil
			}
			if err != nil {
				return err
			}
			changed := expr != sc.Expr || zone != sc.Zone
			if changed {
				if err := s.cancelPlanned(ctx, tx, sc.Name, store.ScheduleChangedError(sc.Name)); err != nil {
					return err
				}
			}
			rs, err := tx.Query(ctx, s.sql(replaceScheduleSQL), s.now(), sc.Name, sc.Expr, sc.Zone, sc.Kind,
				sc.Queue, jsonParam(sc.Args), sc.Priority, sc.MaxAttempts, tags, string(sc.Missed), changed)
			if err != nil {
				return err
			}
			got, err := scanSchedules(rs)
			if err == nil && len(got) != 1 {
				err = fmt.Errorf("replace returned %d schedules", len(got))
			}
			if err != nil {
				return err
			}
			out = got[0]
			return nil
		}
		return fmt.Errorf("still contended after %d rounds", upsertRounds)
	})
	if err != nil {
		return store.Schedule{}, fmt.Errorf("postgres: upsert schedule %s: %w", sc.Name, unavailable(err))
	}
	return out, nil
}

var cancelPlannedSQL = `
WITH cancelled AS (
	UPDATE {schema}.jobs SET state = 'cancelled', finalized_at = {now},
		errors = errors || jsonb_build_array(jsonb_build_object(
			'attempt', attempt, 'at', {now}, 'error', $3::text)),
		unique_states = ` + keepKeyAmong("'cancelled'", `p.schedule = $2 AND p.state IN ('scheduled', 'available')
			AND (p.state = 'scheduled' OR p.attempted_at IS NULL) AND 'cancelled' = ANY (p.unique_states)`) + `
	WHERE id IN (
		-- Through jobs_schedule, whatever queue each was planned into.
		SELECT id FROM {schema}.jobs WHERE schedule = $2 AND state IN ('scheduled', 'available')
			AND (state = 'scheduled' OR attempted_at IS NULL))
		-- Again on the row updated: a claim that took a job after the subquery read it commits
		-- before this UPDATE gets its row, which it then updates as it is now (READ COMMITTED
		-- checks the WHERE again on the new row, not the subquery's reading of the old one).
		AND (state = 'scheduled' OR state = 'available' AND attempted_at IS NULL)
	RETURNING id, state, queue
)
SELECT ` + finalNotify("cancelled")

// cancelPlanned cancels the jobs schedule name planned that have not started — scheduled, or due
// and never attempted, in whichever queue — noting why in their errors as an attempt's error
// would be. The caller holds the schedule's row lock.
func (s *Store) cancelPlanned(ctx context.Context, tx pgx.Tx, name, why string) error {
	_, err := tx.Exec(ctx, s.sql(cancelPlannedSQL), s.now(), name, why)
	return err
}

// GetSchedule returns one schedule, or store.ErrNotFound.
func (s *Store) GetSchedule(ctx context.Context, name string) (store.Schedule, error) {
	rs, err := s.pool.Query(ctx, s.sql(`SELECT `+scheduleColumns+` FROM {schema}.schedules WHERE name = $1`), name)
	if err != nil {
		return store.Schedule{}, fmt.Errorf("postgres: get schedule %s: %w", name, unavailable(err))
	}
	got, err := scanSchedules(rs)
	if err == nil && len(got) == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Schedule{}, fmt.Errorf("postgres: get schedule %s: %w", name, unavailable(err))
	}
	return got[0], nil
}

// ListSchedules returns every schedule by name, in byte order (COLLATE "C"), whatever the
// database's collation.
func (s *Store) ListSchedules(ctx context.Context) ([]store.Schedule, error) {
	rs, err := s.pool.Query(ctx, s.sql(`SELECT `+scheduleColumns+` FROM {schema}.schedules ORDER BY name COLLATE "C"`))
	if err != nil {
		return nil, fmt.Errorf("postgres: list schedules: %w", unavailable(err))
	}
	got, err := scanSchedules(rs)
	if err != nil {
		return nil, fmt.Errorf("postgres: list schedules: %w", unavailable(err))
	}
	return got, nil
}

// DeleteSchedule removes a schedule and cancels its jobs that have not started.
func (s *Store) DeleteSchedule(ctx context.Context, name string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var deleted bool
		err := tx.QueryRow(ctx, s.sql(`DELETE FROM {schema}.schedules WHERE name = $1 RETURNING true`), name).Scan(&deleted)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		return s.cancelPlanned(ctx, tx, name, store.ScheduleRemovedError(name))
	})
	if err != nil {
		return fmt.Errorf("postgres: delete schedule %s: %w", name, unavailable(err))
	}
	return nil
}

// SetSchedulePaused pauses or resumes a schedule.
func (s *Store) SetSchedulePaused(ctx context.Context, name string, paused bool) error {
	tag, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.schedules SET paused = $2 WHERE name = $1`), name, paused)
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("postgres: pause schedule %s: %w", name, unavailable(err))
	}
	return nil
}

// PlanSchedule moves last_planned from `from` to `to` and inserts jobs, in one transaction, if
// last_planned still is `from` (the zero time is NULL). The jobs go through the insert path
// every insert takes, unique keys and notifications included.
func (s *Store) PlanSchedule(ctx context.Context, name string, from, to time.Time, jobs []store.InsertParams) (bool, error) {
	if err := plancheck.Check(name, jobs); err != nil {
		return false, fmt.Errorf("postgres: plan schedule %s: %w", name, unavailable(err))
	}
	var planned bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		planned = false
		tag, err := tx.Exec(ctx, s.sql(`UPDATE {schema}.schedules SET last_planned = $2::timestamptz
			WHERE name = $1 AND last_planned IS NOT DISTINCT FROM $3::timestamptz`), name, ts(to), ts(from))
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		if len(jobs) > 0 {
			if _, err := s.insert(ctx, pgxQuerier{c: tx, canCopy: true}, jobs); err != nil {
				return err
			}
		}
		planned = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("postgres: plan schedule %s: %w", name, unavailable(err))
	}
	return planned, nil
}

// scanSchedules reads every row of scheduleColumns and closes rs.
func scanSchedules(rs pgx.Rows) ([]store.Schedule, error) {
	defer rs.Close()
	var out []store.Schedule
	for rs.Next() {
		var (
			sc          store.Schedule
			args        []byte
			missed      string
			lastPlanned *time.Time
		)
		if err := rs.Scan(&sc.Name, &sc.Expr, &sc.Zone, &sc.Kind, &sc.Queue, &args, &sc.Priority,
			&sc.MaxAttempts, &sc.Tags, &missed, &sc.Paused, &lastPlanned, &sc.CreatedAt, &sc.UpdatedAt); err != nil {
			return nil, err
		}
		sc.Args, sc.Missed, sc.LastPlanned = args, store.MissedPolicy(missed), deref(lastPlanned)
		if len(sc.Tags) == 0 {
			sc.Tags = nil
		}
		out = append(out, sc)
	}
	return out, rs.Err()
}
