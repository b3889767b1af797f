package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/claimorder"
)

// expireBatch bounds how many expired jobs one claim marks expired, so that a claim stays quick
// after a long outage; the next claims take the rest.
const expireBatch = 1000

// promoteBatch bounds how many due scheduled or retryable jobs one claim makes available, so that
// a claim stays quick after a long outage; the next claims take the rest, oldest first.
const promoteBatch = 1000

// promoteSQL makes the due scheduled and retryable jobs of queue $2 available, oldest first,
// walking jobs_due (queue, run_at), which ends at the first job not yet due: however many jobs
// wait for a future time, a claim reads none of them. It runs just before claimSQL, in the same
// transaction, so the claim takes what it made available. Moving into available, a job keeps
// its unique key unless another job took the key meanwhile, or an older one promoted with it
// takes it (keepKeyAmong).
var promoteSQL = `
UPDATE {schema}.jobs SET state = 'available', unique_states = ` + keepKeyAmong("'available'",
	`p.queue = $2 AND p.state IN ('scheduled', 'retryable') AND p.run_at <= {now} AND 'available' = ANY (p.unique_states)`) + `
WHERE ctid = ANY (ARRAY(
	SELECT ctid FROM {schema}.jobs
	WHERE queue = $2 AND state IN ('scheduled', 'retryable') AND run_at <= {now}
	ORDER BY run_at
	LIMIT ` + strconv.Itoa(promoteBatch) + `
	FOR UPDATE SKIP LOCKED))`

// claimSQL claims a batch in one statement. picked walks the claim index of one queue in claim
// order and locks what it takes with SKIP LOCKED, so concurrent claimers split the queue instead
// of queueing behind each other's row locks. Jobs whose expiry has passed are marked expired by
// the same statement (through their own small index) instead of being claimed; as the two sets
// are disjoint, the two updates never touch the same row. The paused check is an uncorrelated
// subquery, evaluated once. The UPDATE finds the rows picked locked by their physical address
// (ctid), which the lock keeps from changing until the statement ends, instead of looking each
// up again through the primary key: an eighth of the claim's cost.
//
// So is the limits check, a probe of the limits table's primary key: a claim that a limit
// applies to claims nothing here, and Claim hands it to claimLimited. The check is all that
// claims no limit applies to pay for limits while they find jobs. Only a claim that comes back
// empty asks, in a second statement (limitsApplySQL), whether a limit was the reason: no job
// waits for an empty claim. The answer is not carried back by this statement, nor sent in the
// same round trip, because either made every claim dearer: PostgreSQL plans this statement
// afresh each time (it estimates custom plans cheaper than a generic one), and a result row for
// the answer doubled the planning the check adds, while a pipelined probe ran on every claim.
var claimSQL = `
WITH expired AS (
	UPDATE {schema}.jobs SET state = 'expired', finalized_at = {now},
		unique_states = ` + keepKeyAmong("'expired'",
	`p.queue = $2 AND p.expires_at <= {now} AND p.state IN ('available', 'scheduled', 'retryable') AND 'expired' = ANY (p.unique_states)`) + `
	WHERE id IN (
		SELECT id FROM {schema}.jobs
		WHERE queue = $2 AND expires_at <= {now} AND state IN ('available', 'scheduled', 'retryable')
		LIMIT ` + strconv.Itoa(expireBatch) + `
		FOR UPDATE SKIP LOCKED)
	RETURNING ` + notifyIfFinal + `
),
picked AS (
	SELECT ctid FROM {schema}.jobs
	WHERE queue = $2
		AND state = 'available'
		AND (expires_at IS NULL OR expires_at > {now})
		AND kind = ANY ($3::text[])
		AND NOT EXISTS (SELECT 1 FROM {schema}.queues WHERE name = $2 AND paused)
		AND NOT EXISTS (SELECT 1 FROM {schema}.limits ` + limitsOn("$2", "$3") + `)
	ORDER BY ` + claimorder.SQL + `
	LIMIT $4
	FOR UPDATE SKIP LOCKED
)
UPDATE {schema}.jobs SET
	state = 'running', attempt = attempt + 1, fence = ` + nextFence + `, owner = $5, attempted_by = $5,
	lease_until = {now} + $6 * interval '1 microsecond', attempted_at = {now}
WHERE ctid = ANY (ARRAY(SELECT ctid FROM picked))
RETURNING ` + jobColumns

// claimSettingsSQL starts a claim's batch: the pinned plans, and a commit that does not wait
// for the WAL flush. A claim is the one write of a job's life that a crash of the server may
// undo without harm: what it changes (the job running, its lease, its fence) is lost together,
// and the job is where it was before, to be claimed again. The node that had claimed it may
// still run it meanwhile; its outcome and heartbeats then carry a fence the job no longer has
// (nextFence) and are refused, as after any lost lease. Any later synchronous commit flushes
// the claim with it, so a completion is never durable without its claim; and the WAL writer
// flushes it within a few hundred milliseconds anyway. Waiting for the flush was a large part
// of a claim's time: without it a drain ran 15 % faster, and a job inserted from another
// process started 40 % sooner at the median. Claims under a limit wait for the flush: a lost
// one could let a run outlive the count that allowed it.
const claimSettingsSQL = pinPlanSQL + `, set_config('synchronous_commit', 'off', true)`

// nextFence is a claimed job's new fence: one more than its last, or the claim's time in
// microseconds if that is larger. The time makes a fence handed out by a claim that a crash
// undid (claimSettingsSQL) smaller than the one the job's next claim gets, as the server's
// clock moves on while it restarts; one more than the last alone would hand the same fence out
// twice, to the lost claim's run and the next one.
const nextFence = `greatest(fence + 1, (extract(epoch FROM {now}) * 1000000)::bigint)`

// limitsOn is the WHERE clause that finds the limits on a queue and on kinds, given the
// placeholders of the queue and of the kinds.
func limitsOn(queue, kinds string) string {
	return `WHERE (scope = 'queue' AND name = ` + queue + `) OR (scope = 'kind' AND name = ANY (` + kinds + `::text[]))`
}

var limitsApplySQL = `SELECT EXISTS (SELECT 1 FROM {schema}.limits ` + limitsOn("$1", "$2") + `)`

// Claim takes up to p.Max claimable jobs of p.Queue whose kind is in p.Kinds, in claim order.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) ([]*store.JobRow, error) {
	if p.Max <= 0 || len(p.Kinds) == 0 {
		return nil, nil
	}
	var jobs []*store.JobRow
	now := s.now()
	b := &pgx.Batch{}
	b.Queue(claimSettingsSQL)
	b.Queue(s.sql(promoteSQL), now, p.Queue)
	b.Queue(s.sql(claimSQL), now, p.Queue, p.Kinds, p.Max, p.Owner, p.LeaseFor.Microseconds()).Query(func(rs pgx.Rows) error {
		var err error
		jobs, err = scanJobs(rs)
		return err
	})
	err := s.pool.SendBatch(ctx, b).Close()
	if err == nil && len(jobs) == 0 {
		var limited bool
		err = s.pool.QueryRow(ctx, s.sql(limitsApplySQL), p.Queue, p.Kinds).Scan(&limited)
		if err == nil && limited {
			jobs, err = s.claimLimited(ctx, p)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: claim: %w", unavailable(err))
	}
	// UPDATE ... RETURNING does not keep the order picked took them in.
	claimorder.Sort(jobs)
	return jobs, nil
}

// heartbeatSQL skips rows another transaction has locked: those are being completed (or
// rescued) right now, so their lease no longer matters. Locking them instead deadlocked with the
// node's own batched completion, which locks the same rows in another order.
const heartbeatSQL = `
WITH mine AS (
	SELECT id FROM {schema}.jobs
	WHERE state = 'running' AND owner = $2
	FOR UPDATE SKIP LOCKED
),
extended AS (
	UPDATE {schema}.jobs SET lease_until = {now} + $3 * interval '1 microsecond'
	WHERE id IN (SELECT id FROM mine)
	RETURNING id, cancel_requested
)
SELECT id FROM extended WHERE cancel_requested ORDER BY id`

// Heartbeat extends the leases of all of owner's running jobs in one statement.
func (s *Store) Heartbeat(ctx context.Context, owner string, leaseFor time.Duration) ([]int64, error) {
	rs, err := s.pool.Query(ctx, s.sql(heartbeatSQL), s.now(), owner, leaseFor.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("postgres: heartbeat: %w", unavailable(err))
	}
	defer rs.Close()
	var cancel []int64
	for rs.Next() {
		var id int64
		if err := rs.Scan(&id); err != nil {
			return nil, fmt.Errorf("postgres: heartbeat: %w", unavailable(err))
		}
		cancel = append(cancel, id)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("postgres: heartbeat: %w", unavailable(err))
	}
	return cancel, nil
}

// lostSQL locks up to $2 running jobs whose lease has passed, oldest lease first, and reads what
// store.RescueState and store.RescueError decide from. A lease is held up to and including
// lease_until. SKIP LOCKED: two nodes rescuing at once split the lost jobs instead of waiting
// for each other, and a job being completed right now is left to its completion.
var lostSQL = `SELECT id, attempt, max_attempts, cancel_requested, coalesce(owner, '') FROM {schema}.jobs
	WHERE state = 'running' AND lease_until < {now}
	ORDER BY lease_until, id
	LIMIT $2
	FOR UPDATE SKIP LOCKED`

// rescueSQL ends the attempts of the lost jobs $2, locked by lostSQL in the same transaction, in
// the states $3 with the errors $4; $5 says which states are final. A job that will run again is
// due at once, and its queue is woken; a final one is finalized and announced.
var rescueSQL = `
WITH lost AS (
	SELECT * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::boolean[]) AS l(lost_id, ends, why, final)
),
rescued AS (
	UPDATE {schema}.jobs SET
		state = l.ends,
		run_at = CASE WHEN l.final THEN run_at ELSE {now} END,
		finalized_at = CASE WHEN l.final THEN {now} END,
		errors = errors || jsonb_build_array(jsonb_build_object('attempt', attempt, 'at', {now}, 'error', l.why,
			'node', owner, 'duration_ns', ` + durationSQL("attempted_at") + `)),
		unique_states = ` + keepKeyAmong("l.ends", `EXISTS (SELECT 1 FROM lost l2 WHERE l2.lost_id = p.id
			AND l2.ends = ANY (p.unique_states))`) + `,
		owner = NULL, lease_until = NULL
	FROM lost l
	WHERE id = l.lost_id
	RETURNING ` + jobColumns + `, ` + notifyIfFinal + `,
		CASE WHEN NOT l.final THEN pg_notify({insert_channel}, queue)::text END AS woken
)
SELECT ` + jobColumns + ` FROM rescued`

// Rescue ends the attempts of up to limit running jobs whose lease expired, in one transaction:
// it locks them, decides how each ends (store.RescueState), and ends them. It first settles the
// dependents a completion parked and did not settle (its Store failed or stopped meanwhile).
func (s *Store) Rescue(ctx context.Context, limit int) ([]*store.JobRow, error) {
	if limit <= 0 {
		return nil, nil
	}
	s.afterParked(ctx, "rescue") // a failure is logged: it must not keep lost jobs from rescue
	var jobs []*store.JobRow
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rs, err := tx.Query(ctx, s.sql(lostSQL), s.now(), limit)
		if err != nil {
			return err
		}
		var ids []int64
		var ends, whys []string
		var finals []bool
		for rs.Next() {
			var id int64
			var attempt, maxAttempts int
			var cancelRequested bool
			var owner string
			if err := rs.Scan(&id, &attempt, &maxAttempts, &cancelRequested, &owner); err != nil {
				rs.Close()
				return err
			}
			state := store.RescueState(attempt, maxAttempts, cancelRequested)
			ids, ends = append(ids, id), append(ends, string(state))
			whys, finals = append(whys, store.RescueError(owner)), append(finals, state.Final())
		}
		rs.Close()
		if err := rs.Err(); err != nil || len(ids) == 0 {
			return err
		}
		rs, err = tx.Query(ctx, s.sql(rescueSQL), s.now(), ids, ends, whys, finals)
		if err != nil {
			return err
		}
		jobs, err = scanJobs(rs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: rescue: %w", unavailable(err))
	}
	return jobs, nil
}
