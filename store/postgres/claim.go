package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotahq/rota/store"
)

// expireBatch bounds how many expired jobs one claim marks expired, so that a claim stays quick
// after a long outage; the next claims take the rest.
const expireBatch = 1000

// claimSQL claims a batch in one statement. picked walks the claim index of one queue in claim
// order and locks what it takes with SKIP LOCKED, so concurrent claimers split the queue instead
// of queueing behind each other's row locks. Due scheduled and retryable jobs are claimed in the
// same pass as available ones: there is no promotion step. Jobs whose expiry has passed are
// marked expired by the same statement (through their own small index) instead of being
// claimed; as the two sets are disjoint, the two updates never touch the same row. The paused
// check is an uncorrelated subquery, evaluated once.
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
	UPDATE {schema}.jobs SET state = 'expired', finalized_at = {now}
	WHERE id IN (
		SELECT id FROM {schema}.jobs
		WHERE queue = $2 AND expires_at <= {now} AND state IN ('available', 'scheduled', 'retryable')
		LIMIT ` + strconv.Itoa(expireBatch) + `
		FOR UPDATE SKIP LOCKED)
	RETURNING ` + notifyIfFinal + `
),
picked AS (
	SELECT id FROM {schema}.jobs
	WHERE queue = $2
		AND state IN ('available', 'scheduled', 'retryable')
		AND (state = 'available' OR run_at <= {now})
		AND (expires_at IS NULL OR expires_at > {now})
		AND kind = ANY ($3::text[])
		AND NOT EXISTS (SELECT 1 FROM {schema}.queues WHERE name = $2 AND paused)
		AND NOT EXISTS (SELECT 1 FROM {schema}.limits ` + limitsOn("$2", "$3") + `)
	ORDER BY priority DESC, run_at, id
	LIMIT $4
	FOR UPDATE SKIP LOCKED
)
UPDATE {schema}.jobs SET
	state = 'running', attempt = attempt + 1, fence = fence + 1, owner = $5,
	lease_until = {now} + $6 * interval '1 microsecond', attempted_at = {now}
WHERE id IN (SELECT id FROM picked)
RETURNING ` + jobColumns

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
	err := s.queryPinned(ctx, claimSQL, []any{s.now(), p.Queue, p.Kinds, p.Max, p.Owner, p.LeaseFor.Microseconds()},
		func(rs pgx.Rows) error {
			var err error
			jobs, err = scanJobs(rs)
			return err
		})
	if err == nil && len(jobs) == 0 {
		var limited bool
		err = s.pool.QueryRow(ctx, s.sql(limitsApplySQL), p.Queue, p.Kinds).Scan(&limited)
		if err == nil && limited {
			jobs, err = s.claimLimited(ctx, p)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: claim: %w", err)
	}
	// UPDATE ... RETURNING does not keep the order picked took them in.
	slices.SortFunc(jobs, func(a, b *store.JobRow) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), a.RunAt.Compare(b.RunAt), cmp.Compare(a.ID, b.ID))
	})
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
		return nil, fmt.Errorf("postgres: heartbeat: %w", err)
	}
	defer rs.Close()
	var cancel []int64
	for rs.Next() {
		var id int64
		if err := rs.Scan(&id); err != nil {
			return nil, fmt.Errorf("postgres: heartbeat: %w", err)
		}
		cancel = append(cancel, id)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("postgres: heartbeat: %w", err)
	}
	return cancel, nil
}

// rescuedSQL is the state a rescued job ends in: retryable while it has attempts left, unless a
// user asked to cancel it while it ran (then cancelled), else discarded.
const rescuedSQL = `(CASE WHEN cancel_requested THEN 'cancelled'
		WHEN attempt < max_attempts THEN 'retryable' ELSE 'discarded' END)`

// rescueSQL ends the attempts of running jobs whose lease has passed, oldest lease first. A
// lease is held up to and including lease_until. A job that will be retried is due at once, so
// its queue is woken; a discarded one is announced final.
var rescueSQL = `
WITH lost AS (
	SELECT id FROM {schema}.jobs
	WHERE state = 'running' AND lease_until < {now}
	ORDER BY lease_until, id
	LIMIT $2
	FOR UPDATE SKIP LOCKED
),
rescued AS (
	UPDATE {schema}.jobs SET
		state = ` + rescuedSQL + `,
		run_at = CASE WHEN ` + rescuedSQL + ` = 'retryable' THEN {now} ELSE run_at END,
		finalized_at = CASE WHEN ` + rescuedSQL + ` = 'retryable' THEN NULL ELSE {now} END,
		errors = errors || jsonb_build_array(jsonb_build_object(
			'attempt', attempt, 'at', {now},
			'error', format('lease expired: node %s stopped renewing it', owner))),
		unique_states = ` + keepKeyIf(rescuedSQL) + `,
		owner = NULL, lease_until = NULL
	WHERE id IN (SELECT id FROM lost)
	RETURNING ` + jobColumns + `, ` + notifyIfFinal + `,
		CASE WHEN state = 'retryable' THEN pg_notify({insert_channel}, queue)::text END AS woken
)
SELECT ` + jobColumns + ` FROM rescued`

// Rescue ends the attempts of up to limit running jobs whose lease expired.
func (s *Store) Rescue(ctx context.Context, limit int) ([]*store.JobRow, error) {
	if limit <= 0 {
		return nil, nil
	}
	rs, err := s.pool.Query(ctx, s.sql(rescueSQL), s.now(), limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: rescue: %w", err)
	}
	jobs, err := scanJobs(rs)
	if err != nil {
		return nil, fmt.Errorf("postgres: rescue: %w", err)
	}
	return jobs, nil
}
