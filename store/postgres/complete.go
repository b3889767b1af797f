package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/outcome"
)

// endsSQL is the state an outcome leaves its job in: its own, or the one it leaves when a user
// asked to cancel the job while it ran (store.CancelRequestedState, computed per outcome). It
// reads cancel_requested in the UPDATE itself, so that a Cancel committed while the UPDATE
// waited for the row is seen.
const endsSQL = `(CASE WHEN jobs.cancel_requested THEN o.cancel_state ELSE o.state END)`

// completeSQL records a batch of outcomes in one statement. Each outcome applies only to a job
// still running under its fence: a node that lost its lease cannot overwrite the job's new
// owner. The jobs are looked up by id, under a pinned plan (see pinPlanSQL). That the job is
// still running is checked against the outcomes' column was ('running'), materialized so that
// the planner cannot see it is a constant: seeing one, it read the jobs through jobs_running,
// every running job of the fleet, which statistics taken while few jobs ran make look cheaper
// than the lookups. An error is recorded with the attempt number, owner and running time of the
// claim (the store knows them; the caller might not), before any refund, and stamped with the store's time when it came
// without one. The final jobs are announced on the final channel, hundreds of ids per NOTIFY; the
// queues given a job to run now, on the insert channel.
var completeSQL = `
WITH outcome AS MATERIALIZED (
	SELECT *, 'running' AS was FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[],
		$6::timestamptz[], $7::boolean[], $8::boolean[], $9::jsonb[], $10::json[])
		AS o(id, fence, state, cancel_state, run_at, due_now, refund, error, result)
),
done AS (
	UPDATE {schema}.jobs SET
		state = ` + endsSQL + `,
		run_at = CASE WHEN o.due_now THEN {now} ELSE coalesce(o.run_at, jobs.run_at) END,
		attempt = CASE WHEN o.refund THEN greatest(jobs.attempt - 1, 0) ELSE jobs.attempt END,
		errors = CASE WHEN o.error IS NULL THEN jobs.errors ELSE jobs.errors || jsonb_build_array(
			CASE WHEN o.error->'at' IS NULL THEN o.error || jsonb_build_object('at', {now}) ELSE o.error END
			|| jsonb_build_object('attempt', jobs.attempt, 'node', jobs.owner,
				'duration_ns', ` + durationSQL("jobs.attempted_at") + `)) END,
		result = coalesce(o.result, jobs.result),
		finalized_at = CASE WHEN ` + endsSQL + ` IN ` + finalStatesSQL + ` THEN {now} END,
		unique_states = ` + keepKeyAmong(endsSQL, `EXISTS (SELECT 1 FROM outcome o2 WHERE o2.id = p.id
			AND o2.fence = p.fence AND p.state = o2.was
			AND (CASE WHEN p.cancel_requested THEN o2.cancel_state ELSE o2.state END) = ANY (p.unique_states))`) + `,
		owner = NULL, lease_until = NULL
	FROM outcome o
	WHERE jobs.id = o.id AND jobs.fence = o.fence AND jobs.state = o.was
	RETURNING jobs.id, jobs.state, jobs.queue, jobs.has_dependents, jobs.run_at
),
-- The ends with dependents, handed to resolveEndedSQL in settings: most batches have none, and
-- then it reads no row.
ended AS (
	SELECT set_config('rota.ended_ids', coalesce((array_agg(id ORDER BY id))::text, ''), true),
		set_config('rota.ended_states', coalesce((array_agg(state ORDER BY id))::text, ''), true)
	FROM done WHERE has_dependents AND state IN ` + finalStatesSQL + `
)
SELECT ARRAY(SELECT id FROM done), ` + finalNotify("done") + ` + ` + runnableNotify + ` FROM ended`

// runnableNotify wakes the idle nodes of each queue an outcome left a job claimable in at once
// (handed back, or to run again now), as an insert does: counted, so that it runs.
var runnableNotify = `(SELECT count(pg_notify({insert_channel}, queue)) FROM (
	SELECT DISTINCT queue FROM done WHERE state = 'available' OR (state IN ('retryable', 'scheduled') AND run_at <= {now})) r)`

// resolveEndedSQL resolves the dependents of the jobs completeSQL ended that have some, which it
// handed over in the settings rota.ended_ids and rota.ended_states, and reports whether it
// parked some (rota.parked, set by resolve_dependents). The count makes the resolution run
// before the setting is read.
var resolveEndedSQL = `
SELECT coalesce(current_setting('rota.parked', true), '') = '1' FROM (
	SELECT count({schema}.resolve_dependents(current_setting('rota.ended_ids')::bigint[],
		current_setting('rota.ended_states')::text[], {now}))
	WHERE current_setting('rota.ended_ids', true) <> '') r`

// durationSQL is the time from attemptedAt to the store's now, in nanoseconds, as an attempt's
// error records it. Rounding, not truncating, keeps whole microseconds exact through the float.
func durationSQL(attemptedAt string) string {
	return `round(extract(epoch from {now} - ` + attemptedAt + `) * 1000000000)::bigint`
}

// Complete records outcomes, all in one statement unless one job has several outcomes in the
// call: an UPDATE changes a row once, so the later ones go in statements of their own (see
// outcome.Rounds).
func (s *Store) Complete(ctx context.Context, outcomes []store.Outcome) ([]bool, error) {
	if err := outcome.Validate(outcomes); err != nil {
		return nil, fmt.Errorf("postgres: complete: %w", unavailable(err))
	}
	applied := make([]bool, len(outcomes))
	for _, round := range outcome.Rounds(outcomes) {
		if err := s.complete(ctx, outcomes, round, applied); err != nil {
			// Marked when it is the server's trouble: the completer retries such an error as
			// it is, where it would take a refusal for something in the outcome.
			return nil, fmt.Errorf("postgres: complete: %w", unavailable(err))
		}
	}
	return applied, nil
}

func (s *Store) complete(ctx context.Context, outcomes []store.Outcome, idx []int, applied []bool) error {
	n := len(idx)
	var (
		ids, fences          = make([]int64, n), make([]int64, n)
		states, cancelStates = make([]string, n), make([]string, n)
		runAts               = make([]*time.Time, n)
		dueNow, refunds      = make([]bool, n), make([]bool, n)
		errs, results        = make([][]byte, n), make([][]byte, n)
	)
	for k, i := range idx {
		o := outcomes[i]
		ids[k], fences[k], refunds[k] = o.ID, o.Fence, o.RefundAttempt
		states[k], cancelStates[k] = string(o.State), string(store.CancelRequestedState(o.State))
		var at time.Time
		at, dueNow[k] = outcome.RunAt(o)
		runAts[k] = ts(at)
		results[k] = jsonResult(o.Result)
		if o.Error != nil {
			b, err := errorJSON(*o.Error)
			if err != nil {
				return err
			}
			errs[k] = b
		}
	}
	var done []int64
	var notified int64
	var parked bool
	// One round trip, one transaction: the pinned plans, the bound on the dependents it
	// resolves, the outcomes, the resolution of their ends, and whether it left dependents to
	// settle.
	now := s.now()
	b := &pgx.Batch{}
	b.Queue(resolvePrefixSQL, s.cfg.settleBatch)
	b.Queue(s.sql(completeSQL), now, ids, fences, states, cancelStates, runAts, dueNow, refunds, errs, results).
		Query(func(rs pgx.Rows) error { return scanOne(rs, &done, &notified) })
	b.Queue(s.sql(resolveEndedSQL), now).QueryRow(func(r pgx.Row) error { return r.Scan(&parked) })
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	if parked && !s.leaveParked {
		s.afterParked(ctx, "complete")
	}
	pos := make(map[int64]int, n)
	for k, i := range idx {
		pos[outcomes[i].ID] = k
	}
	for _, id := range done {
		applied[idx[pos[id]]] = true
	}
	return nil
}

// errorJSON is an attempt's error as completeSQL takes it: portable, to the microsecond, and
// without an at when it has no time, for the statement to stamp it with the store's.
func errorJSON(e store.AttemptError) ([]byte, error) {
	e = store.PortableError(e)
	return json.Marshal(struct {
		Attempt int       `json:"attempt"`
		At      time.Time `json:"at,omitzero"`
		Error   string    `json:"error"`
		Trace   string    `json:"trace,omitempty"`
	}{e.Attempt, e.At.Truncate(time.Microsecond), e.Error, e.Trace})
}

// jsonResult is the result to store. A result that is not JSON would make the whole batch fail,
// so it is kept as a JSON string of its bytes instead.
func jsonResult(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}
