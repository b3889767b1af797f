package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// pinPlanSQL fixes the plans of the statements that follow it in their transaction (claims and
// completions): the index walks their comments describe, whatever the table's statistics say,
// planned once per connection.
//
// Left to itself, the planner judged a claim by statistics that lag the jobs table. A table that
// filled faster than autovacuum analyzes it (100,000 jobs inserted in seconds: the first
// analyze comes up to a minute later) looks nearly empty, and the planner then gathered the
// whole queue with a bitmap scan and sorted it, on disk, for every claim: 100 ms a claim instead
// of 1 ms, a drain at 1,500 jobs/s instead of 10,000. A generic plan made from good statistics
// is no safer: it assumes a third of the queue has expired and reads the table from the start
// to find them, when no job has an expiry. A completion joined its outcomes with every running
// job of the fleet, read through a bitmap scan, instead of looking its jobs up by id.
//
// With sequential scans, bitmap scans and sorts priced out, the plan left is the designed one:
// jobs_claim in claim order, jobs_expiry, primary-key lookups. That plan holds for any
// statistics, so it is also made once per connection (a generic plan) instead of at every
// statement, which saves 0.5 to 1 ms of the server's CPU each time. A disabled step still
// exists where there is no other way (the sort of a limited claim's window), priced at ten
// billion; such a price would have the statement compiled by JIT at every run (100 ms), so JIT
// is off too. Every setting is local to the transaction.
const pinPlanSQL = `SELECT set_config('enable_seqscan', 'off', true),
	set_config('enable_bitmapscan', 'off', true), set_config('enable_sort', 'off', true),
	set_config('plan_cache_mode', 'force_generic_plan', true), set_config('jit', 'off', true)`

// queryPinned runs the statement q (before s.sql) with args under pinPlanSQL, in one round trip:
// the two statements are one batch, which the server runs as one implicit transaction, so the
// settings end with it. scan reads q's rows.
func (s *Store) queryPinned(ctx context.Context, q string, args []any, scan func(pgx.Rows) error) error {
	b := pinnedBatch()
	b.Queue(s.sql(q), args...).Query(scan)
	return s.pool.SendBatch(ctx, b).Close()
}

// pinnedBatch is a batch that starts with pinPlanSQL: the statements queued after it run under
// the pinned plans, in one round trip and one implicit transaction, which ends the settings.
func pinnedBatch() *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue(pinPlanSQL)
	return b
}
