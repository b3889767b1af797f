package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/claimorder"
	"github.com/rotahq/rota/store/internal/limitplan"
)

var _ store.Limiter = (*Store)(nil)

const setLimitSQL = `
INSERT INTO {schema}.limits (scope, name, max_running, rate, period) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (scope, name) DO UPDATE SET max_running = excluded.max_running,
	rate = excluded.rate, period = excluded.period`

// SetLimit creates, replaces or removes the limit for (l.Scope, l.Name). Taking a limit's Rate
// away forgets the starts recorded under it, so a rate set again begins with an empty window.
// The limit's row is written first: a claim under the limit holds its lock, and SetLimit waits
// for it before it touches the starts that claim may be writing.
func (s *Store) SetLimit(ctx context.Context, l store.Limit) error {
	if err := l.Validate(); err != nil {
		return fmt.Errorf("postgres: set limit: %w", unavailable(err))
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if l.Removes() {
			_, err = tx.Exec(ctx, s.sql(`DELETE FROM {schema}.limits WHERE scope = $1 AND name = $2`), string(l.Scope), l.Name)
		} else {
			_, err = tx.Exec(ctx, s.sql(setLimitSQL), string(l.Scope), l.Name, l.MaxRunning, l.Rate, l.Period.Microseconds())
		}
		if err != nil || l.Rate > 0 {
			return err
		}
		_, err = tx.Exec(ctx, s.sql(`DELETE FROM {schema}.limit_starts WHERE scope = $1 AND name = $2`), string(l.Scope), l.Name)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: set limit: %w", unavailable(err))
	}
	return nil
}

// ListLimits returns every limit, by scope then name in byte order (COLLATE "C"), whatever the
// database's collation.
func (s *Store) ListLimits(ctx context.Context) ([]store.Limit, error) {
	rs, err := s.pool.Query(ctx, s.sql(`SELECT scope, name, max_running, rate, period FROM {schema}.limits
		ORDER BY scope COLLATE "C", name COLLATE "C"`))
	if err != nil {
		return nil, fmt.Errorf("postgres: list limits: %w", unavailable(err))
	}
	defer rs.Close()
	var out []store.Limit
	for rs.Next() {
		var l store.Limit
		var period int64
		if err := rs.Scan(&l.Scope, &l.Name, &l.MaxRunning, &l.Rate, &period); err != nil {
			return nil, fmt.Errorf("postgres: list limits: %w", unavailable(err))
		}
		l.Period = time.Duration(period) * time.Microsecond
		out = append(out, l)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list limits: %w", unavailable(err))
	}
	return out, nil
}

// lockLimitsSQL locks the rows of the limits that apply to a claim, in one order for every
// claim, so two claims that share two limits cannot deadlock.
var lockLimitsSQL = `SELECT 1 FROM {schema}.limits ` + limitsOn("$1", "$2") + ` ORDER BY scope, name FOR UPDATE`

// limitUsageSQL reads the locked limits with what counts against them. It runs after the lock,
// so its snapshot holds every claim made under them before (the transaction is READ
// COMMITTED: each statement sees what committed before it began). Running jobs are counted
// through jobs_running, one entry per running job of the fleet; starts through
// limit_starts_window.
var limitUsageSQL = `
SELECT l.scope, l.name, l.max_running, l.rate, l.period,
	CASE WHEN l.max_running = 0 THEN 0
		WHEN l.scope = 'queue' THEN (SELECT count(*) FROM {schema}.jobs WHERE state = 'running' AND queue = l.name)
		ELSE (SELECT count(*) FROM {schema}.jobs WHERE state = 'running' AND kind = l.name)
	END,
	CASE WHEN l.rate = 0 THEN 0
		ELSE (SELECT coalesce(sum(n), 0) FROM {schema}.limit_starts
			WHERE scope = l.scope AND name = l.name AND at > {now} - l.period * interval '1 microsecond')
	END
FROM {schema}.limits l ` + limitsOn("$2", "$3")

// claimWithinSQL is claimSQL for a claim under limits: it takes up to $4 jobs of the kinds in
// $3, and no more of a kind than its cap in $7. Jobs beyond a cap are locked, not claimed, until
// the transaction ends; only claims under the same limit, which wait for its row lock, could
// want them. Expired jobs were ended by claimSQL just before.
var claimWithinSQL = `
WITH cap AS (
	SELECT * FROM unnest($3::text[], $7::bigint[]) AS c(kind, n)
),
picked AS (
	SELECT id, kind, priority, run_at FROM {schema}.jobs
	WHERE queue = $2
		AND state = 'available'
		AND (expires_at IS NULL OR expires_at > {now})
		AND kind = ANY ($3::text[])
		AND NOT EXISTS (SELECT 1 FROM {schema}.queues WHERE name = $2 AND paused)
	ORDER BY ` + claimorder.SQL + `
	LIMIT $4
	FOR UPDATE SKIP LOCKED
),
within AS (
	SELECT p.id FROM (
		SELECT id, kind, row_number() OVER (PARTITION BY kind ORDER BY ` + claimorder.SQL + `) AS rank
		FROM picked) p
	JOIN cap c ON c.kind = p.kind
	WHERE p.rank <= c.n
)
UPDATE {schema}.jobs SET
	state = 'running', attempt = attempt + 1, fence = ` + nextFence + `, owner = $5, attempted_by = $5,
	lease_until = {now} + $6 * interval '1 microsecond', attempted_at = {now}
WHERE id IN (SELECT id FROM within)
RETURNING ` + jobColumns

// recordStartsSQL adds a claim's starts under rate limits and forgets the starts that left their
// limit's window.
const recordStartsSQL = `
WITH forgotten AS (
	DELETE FROM {schema}.limit_starts s
	USING unnest($2::text[], $3::text[], $4::bigint[]) AS r(scope, name, period)
	WHERE s.scope = r.scope AND s.name = r.name AND s.at <= {now} - r.period * interval '1 microsecond'
)
INSERT INTO {schema}.limit_starts (scope, name, at, n)
SELECT scope, name, {now}, n FROM unnest($2::text[], $3::text[], $5::integer[]) AS r(scope, name, n)`

// claimLimited claims under the limits that apply to p, in one READ COMMITTED transaction: it
// locks their rows, counts, claims within the plan in rounds (see limitplan.Plan) and records
// the starts. Claims under a limit take turns on its row lock; the lock is held for a few
// statements, never across a job's run.
func (s *Store) claimLimited(ctx context.Context, p store.ClaimParams) ([]*store.JobRow, error) {
	var out []*store.JobRow
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		out = nil
		// One round trip: the plan settings (they last until the commit), the lock, and the usage
		// under it. The server runs the three in order, and the usage statement takes its
		// snapshot when it starts, after the lock is granted.
		var usage []limitplan.Usage
		b := pinnedBatch()
		b.Queue(s.sql(lockLimitsSQL), p.Queue, p.Kinds)
		b.Queue(s.sql(limitUsageSQL), s.now(), p.Queue, p.Kinds).Query(func(rs pgx.Rows) error {
			var err error
			usage, err = scanUsage(rs)
			return err
		})
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("lock limits and read their usage: %w", err)
		}
		plan := limitplan.New(p.Queue, p.Kinds, p.Max, usage)
		for {
			kinds, caps := plan.Kinds()
			if len(kinds) == 0 {
				break
			}
			asked := plan.Budget
			rs, err := tx.Query(ctx, s.sql(claimWithinSQL), s.now(), p.Queue, kinds, asked, p.Owner,
				p.LeaseFor.Microseconds(), caps)
			if err != nil {
				return err
			}
			got, err := scanJobs(rs)
			if err != nil {
				return err
			}
			out = append(out, got...)
			if !plan.Took(got, asked) {
				break
			}
		}
		return s.recordStarts(ctx, tx, plan.Starts())
	})
	return out, err
}

// LimitUsage returns the queue's and the kind's limits with what counts against them now, as a
// claim counts them, without their locks.
func (s *Store) LimitUsage(ctx context.Context, queue, kind string) ([]store.LimitUsage, error) {
	rs, err := s.pool.Query(ctx, s.sql(limitUsageSQL+` ORDER BY l.scope DESC`), s.now(), queue, []string{kind})
	if err != nil {
		return nil, fmt.Errorf("postgres: limit usage: %w", unavailable(err))
	}
	out, err := scanUsage(rs)
	if err != nil {
		return nil, fmt.Errorf("postgres: limit usage: %w", unavailable(err))
	}
	return out, nil
}

// scanUsage reads the rows of limitUsageSQL.
func scanUsage(rs pgx.Rows) ([]limitplan.Usage, error) {
	defer rs.Close()
	var out []limitplan.Usage
	for rs.Next() {
		var u limitplan.Usage
		var period int64
		if err := rs.Scan(&u.Scope, &u.Name, &u.MaxRunning, &u.Rate, &period, &u.Running, &u.Started); err != nil {
			return nil, err
		}
		u.Period = time.Duration(period) * time.Microsecond
		out = append(out, u)
	}
	return out, rs.Err()
}

func (s *Store) recordStarts(ctx context.Context, tx pgx.Tx, starts []limitplan.Start) error {
	if len(starts) == 0 {
		return nil
	}
	scopes, names := make([]string, len(starts)), make([]string, len(starts))
	periods, ns := make([]int64, len(starts)), make([]int32, len(starts))
	for i, st := range starts {
		scopes[i], names[i], periods[i], ns[i] = string(st.Scope), st.Name, st.Period, int32(st.N)
	}
	_, err := tx.Exec(ctx, s.sql(recordStartsSQL), s.now(), scopes, names, periods, ns)
	return err
}
