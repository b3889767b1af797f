package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotahq/rota/store"
)

// Get returns one job, or store.ErrNotFound.
func (s *Store) Get(ctx context.Context, id int64) (*store.JobRow, error) {
	j, err := s.get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("postgres: get %d: %w", id, unavailable(err))
	}
	return j, nil
}

func (s *Store) get(ctx context.Context, id int64) (*store.JobRow, error) {
	j, err := scanJob(s.pool.QueryRow(ctx, s.sql(`SELECT `+jobColumns+` FROM {schema}.jobs WHERE id = $1`), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	return j, err
}

// List returns a page of jobs in id order. The statement holds only the filters p sets, so each
// shape of filter gets a plan of its own. No index serves the tag, schedule, args or created
// filters: the plan walks the primary key (or a workflow's steps) and tests each row, so a page
// costs the rows walked until it fills.
func (s *Store) List(ctx context.Context, p store.ListParams) ([]*store.JobRow, error) {
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("postgres: list: %w", unavailable(err))
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if len(p.States) > 0 {
		states := make([]string, len(p.States))
		for i, st := range p.States {
			states[i] = string(st)
		}
		where = append(where, "state = ANY ("+arg(states)+"::text[])")
	}
	if p.Queue != "" {
		where = append(where, "queue = "+arg(p.Queue))
	}
	if p.Kind != "" {
		where = append(where, "kind = "+arg(p.Kind))
	}
	if p.Workflow != "" {
		// workflow_steps holds a workflow's steps in id order.
		where = append(where, `id IN (SELECT job_id FROM {schema}.workflow_steps WHERE workflow = `+arg(p.Workflow)+`)`)
	}
	where = append(where, listFilters(p, arg)...)
	order := "id"
	if p.AfterID != 0 {
		if p.Desc {
			where = append(where, "id < "+arg(p.AfterID))
		} else {
			where = append(where, "id > "+arg(p.AfterID))
		}
	}
	if p.Desc {
		order = "id DESC"
	}
	limit := p.Limit
	if limit <= 0 {
		limit = store.ListLimitDefault
	}
	q := `SELECT ` + jobColumns + ` FROM {schema}.jobs`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY " + order + " LIMIT " + arg(limit)
	rs, err := s.pool.Query(ctx, s.sql(q), args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list: %w", unavailable(err))
	}
	jobs, err := scanJobs(rs)
	if err != nil {
		return nil, fmt.Errorf("postgres: list: %w", unavailable(err))
	}
	return jobs, nil
}

var cancelSQL = `
WITH cancelled AS (
	UPDATE {schema}.jobs SET
		state = CASE WHEN state = 'running' THEN state ELSE 'cancelled' END,
		cancel_requested = cancel_requested OR state = 'running',
		finalized_at = CASE WHEN state = 'running' THEN finalized_at ELSE {now} END,
		unique_states = CASE WHEN state = 'running' THEN unique_states ELSE ` + keepKeyIf("'cancelled'") + ` END
	WHERE id = $2 AND state IN ('scheduled', 'pending', 'available', 'running', 'retryable')
	RETURNING ` + jobColumns + `, ` + notifyIfFinal + `
)
SELECT ` + jobColumns + ` FROM cancelled`

// Cancel ends a job that has not started as cancelled, and records the request for a running
// one. What waited for a cancelled job is resolved by the jobs_ended trigger.
func (s *Store) Cancel(ctx context.Context, id int64) (*store.JobRow, error) {
	j, err := s.changeOrGet(ctx, s.sql(cancelSQL), id)
	if err != nil {
		return nil, fmt.Errorf("postgres: cancel %d: %w", id, unavailable(err))
	}
	return j, nil
}

var retrySQL = `
WITH retried AS (
	UPDATE {schema}.jobs SET
		state = 'available', run_at = {now}, finalized_at = NULL, owner = NULL, lease_until = NULL,
		cancel_requested = false, max_attempts = greatest(max_attempts, attempt + 1),
		expires_at = CASE WHEN expires_at <= {now} THEN NULL ELSE expires_at END,
		unique_states = ` + keepKeyIf("'available'") + `
	WHERE id = $2 AND state <> 'running'
	RETURNING ` + jobColumns + `, pg_notify({insert_channel}, queue)::text AS notified
)
SELECT ` + jobColumns + ` FROM retried`

// Retry makes a job that is not running available now, and wakes its queue.
func (s *Store) Retry(ctx context.Context, id int64) (*store.JobRow, error) {
	j, err := s.changeOrGet(ctx, s.sql(retrySQL), id)
	if err == nil && j.State == store.StateRunning {
		err = store.ErrJobRunning
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: retry %d: %w", id, unavailable(err))
	}
	return j, nil
}

// changeOrGet runs a statement that changes job id and returns it, or returns nothing when the
// job is not in a state the statement changes; then it returns the job as it is.
func (s *Store) changeOrGet(ctx context.Context, q string, id int64) (*store.JobRow, error) {
	j, err := scanJob(s.pool.QueryRow(ctx, q, s.now(), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return s.get(ctx, id)
	}
	return j, err
}

// deleteSQL deletes a job that is not running. It reads the job's state (before the delete,
// from its snapshot) alongside the delete, so it tells a running job from a missing one in one
// round trip. A job the snapshot shows not running that was not deleted changed while the
// delete waited for its row: another transaction deleted it or claimed it, which a new
// snapshot tells apart (Delete tries again).
const deleteSQL = `
WITH deleted AS (DELETE FROM {schema}.jobs WHERE id = $1 AND state <> 'running' RETURNING id)
SELECT (SELECT state FROM {schema}.jobs WHERE id = $1), EXISTS (SELECT 1 FROM deleted),
	EXISTS (SELECT 1 FROM {schema}.job_settling WHERE dep_id = $1)`

// deleteTries bounds how often Delete reads a job again that changed while it waited.
const deleteTries = 3

// Delete removes a job that is not running. The jobs_deleted trigger cancels what waited for
// it, at the store's time, which the deleted row does not carry: the batch hands it over in the
// setting rota.now first, for its implicit transaction only. A job that ended with dependents
// left parked (its completing Store stopped before settling them) has them settled as it ended.
func (s *Store) Delete(ctx context.Context, id int64) error {
	for try := 1; ; try++ {
		var state *string
		var deleted, parked bool
		b := &pgx.Batch{}
		b.Queue(`SELECT set_config('rota.now', coalesce($1::timestamptz, now())::text, true)`, s.now())
		b.Queue(s.sql(deleteSQL), id).QueryRow(func(r pgx.Row) error { return r.Scan(&state, &deleted, &parked) })
		err := s.pool.SendBatch(ctx, b).Close()
		switch {
		case err != nil:
			return fmt.Errorf("postgres: delete %d: %w", id, unavailable(err))
		case deleted:
			if parked {
				s.afterParked(ctx, "delete")
			}
			return nil
		case state == nil:
			return fmt.Errorf("postgres: delete %d: %w", id, store.ErrNotFound)
		case *state == string(store.StateRunning) || try == deleteTries:
			return fmt.Errorf("postgres: delete %d: %w", id, store.ErrJobRunning)
		}
	}
}

// Prune deletes up to p.Limit finished jobs, oldest first. A zero Limit deletes every match.
func (s *Store) Prune(ctx context.Context, p store.PruneParams) (int, error) {
	states := make([]string, len(p.States))
	for i, st := range p.States {
		states[i] = string(st)
	}
	var limit *int
	if p.Limit > 0 {
		limit = &p.Limit
	}
	tag, err := s.pool.Exec(ctx, s.sql(`
		DELETE FROM {schema}.jobs WHERE id IN (
			SELECT id FROM {schema}.jobs
			WHERE finalized_at < $1 AND state = ANY ($2::text[])
			ORDER BY finalized_at
			LIMIT $3
			FOR UPDATE SKIP LOCKED)`), p.Before, states, limit)
	if err != nil {
		return 0, fmt.Errorf("postgres: prune: %w", unavailable(err))
	}
	return int(tag.RowsAffected()), nil
}

// queueLoadSQL counts one queue's available jobs through the claim index and its running jobs
// through jobs_running (one entry per running job of the fleet), never the finished jobs that
// wait for the pruner.
const queueLoadSQL = `SELECT
	(SELECT count(*) FROM {schema}.jobs WHERE queue = $1 AND state = 'available'),
	(SELECT count(*) FROM {schema}.jobs WHERE state = 'running' AND queue = $1),
	coalesce((SELECT paused FROM {schema}.queues WHERE name = $1), false)`

// QueueLoad counts queue's available and running jobs, for best-effort inserts.
func (s *Store) QueueLoad(ctx context.Context, queue string) (store.QueueStats, error) {
	qs := store.QueueStats{Queue: queue, Counts: make(map[store.State]int64, 2)}
	var available, running int64
	err := s.queryPinned(ctx, queueLoadSQL, []any{queue}, func(rs pgx.Rows) error {
		return scanOne(rs, &available, &running, &qs.Paused)
	})
	if err != nil {
		return qs, fmt.Errorf("postgres: queue load %s: %w", queue, unavailable(err))
	}
	qs.Counts[store.StateAvailable], qs.Counts[store.StateRunning] = available, running
	return qs, nil
}

// QueueStats counts every queue's jobs by state. It counts the whole table, so on a large table
// it is a query for dashboards, not for every insert.
func (s *Store) QueueStats(ctx context.Context) ([]store.QueueStats, error) {
	rs, err := s.pool.Query(ctx, s.sql(`
		SELECT queue, state, count(*), min(run_at) FROM {schema}.jobs GROUP BY queue, state
		UNION ALL
		SELECT name, NULL, 0, NULL FROM {schema}.queues WHERE paused`))
	if err != nil {
		return nil, fmt.Errorf("postgres: queue stats: %w", unavailable(err))
	}
	defer rs.Close()
	byQueue := make(map[string]*store.QueueStats)
	for rs.Next() {
		var (
			queue  string
			state  *string
			count  int64
			oldest *time.Time
		)
		if err := rs.Scan(&queue, &state, &count, &oldest); err != nil {
			return nil, fmt.Errorf("postgres: queue stats: %w", unavailable(err))
		}
		qs := byQueue[queue]
		if qs == nil {
			// Every state is listed, as SQLite lists it, zero or not.
			qs = &store.QueueStats{Queue: queue, Counts: make(map[store.State]int64, len(store.States))}
			for _, st := range store.States {
				qs.Counts[st] = 0
			}
			byQueue[queue] = qs
		}
		switch {
		case state == nil:
			qs.Paused = true
		default:
			qs.Counts[store.State(*state)] = count
			if store.State(*state) == store.StateAvailable {
				qs.OldestAvailable = deref(oldest)
			}
		}
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("postgres: queue stats: %w", unavailable(err))
	}
	stats := make([]store.QueueStats, 0, len(byQueue))
	for _, qs := range byQueue {
		stats = append(stats, *qs)
	}
	slices.SortFunc(stats, func(a, b store.QueueStats) int { return strings.Compare(a.Queue, b.Queue) })
	return stats, nil
}

// PauseQueue stops claims from queue on every node: claims check the queues table.
func (s *Store) PauseQueue(ctx context.Context, queue string) error {
	_, err := s.pool.Exec(ctx, s.sql(`
		INSERT INTO {schema}.queues (name, paused, updated_at) VALUES ($2, true, {now})
		ON CONFLICT (name) DO UPDATE SET paused = true, updated_at = excluded.updated_at`), s.now(), queue)
	if err != nil {
		return fmt.Errorf("postgres: pause %q: %w", queue, unavailable(err))
	}
	return nil
}

// ResumeQueue lets claims take queue's jobs again, and wakes idle nodes for them.
func (s *Store) ResumeQueue(ctx context.Context, queue string) error {
	_, err := s.pool.Exec(ctx, s.sql(`
		WITH resumed AS (
			UPDATE {schema}.queues SET paused = false, updated_at = {now} WHERE name = $2 AND paused
			RETURNING pg_notify({insert_channel}, name)::text AS notified)
		SELECT count(*) FROM resumed`), s.now(), queue)
	if err != nil {
		return fmt.Errorf("postgres: resume %q: %w", queue, unavailable(err))
	}
	return nil
}
