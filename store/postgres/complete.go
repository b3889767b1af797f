package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotahq/rota/store"
)

// endsSQL is the state an outcome leaves its job in: the outcome's, except that one that would
// run the job again ends it cancelled when a user asked to cancel it while it ran (the request
// reached the store after the node had let the job go). It reads cancel_requested in the UPDATE
// itself, so that a Cancel committed while the UPDATE waited for the row is seen.
const endsSQL = `(CASE WHEN jobs.cancel_requested AND o.state IN ('retryable', 'scheduled', 'available')
		THEN 'cancelled' ELSE o.state END)`

// completeSQL records a batch of outcomes in one statement. Each outcome applies only to a job
// still running under its fence: a node that lost its lease cannot overwrite the job's new
// owner. The jobs are looked up by id, under a pinned plan (see pinPlanSQL). That the job is
// still running is checked against the outcomes' column was ('running'), materialized so that
// the planner cannot see it is a constant: seeing one, it read the jobs through jobs_running,
// every running job of the fleet, which statistics taken while few jobs ran make look cheaper
// than the lookups. The final jobs are announced on the final channel, hundreds of ids per
// NOTIFY.
var completeSQL = `
WITH outcome AS MATERIALIZED (
	SELECT *, 'running' AS was FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::timestamptz[],
		$6::boolean[], $7::jsonb[], $8::json[])
		AS o(id, fence, state, run_at, refund, error, result)
),
done AS (
	UPDATE {schema}.jobs SET
		state = ` + endsSQL + `,
		run_at = coalesce(o.run_at, jobs.run_at),
		attempt = CASE WHEN o.refund THEN greatest(jobs.attempt - 1, 0) ELSE jobs.attempt END,
		errors = CASE WHEN o.error IS NULL THEN jobs.errors ELSE jobs.errors || jsonb_build_array(o.error) END,
		result = coalesce(o.result, jobs.result),
		finalized_at = CASE WHEN ` + endsSQL + ` IN ('completed', 'cancelled', 'discarded', 'expired') THEN {now} END,
		unique_states = ` + keepKeyIf(endsSQL) + `,
		owner = NULL, lease_until = NULL
	FROM outcome o
	WHERE jobs.id = o.id AND jobs.fence = o.fence AND jobs.state = o.was
	RETURNING jobs.id, jobs.state, jobs.queue
)
SELECT ARRAY(SELECT id FROM done), ` + finalNotify("done")

// Complete records outcomes, all in one statement unless one job has several outcomes in the
// call: an UPDATE changes a row once, so the later ones go in statements of their own.
func (s *Store) Complete(ctx context.Context, outcomes []store.Outcome) ([]bool, error) {
	applied := make([]bool, len(outcomes))
	rest := make([]int, len(outcomes))
	for i := range rest {
		rest[i] = i
	}
	for len(rest) > 0 {
		var batch, later []int
		seen := make(map[int64]bool, len(rest))
		for _, i := range rest {
			if seen[outcomes[i].ID] {
				later = append(later, i)
				continue
			}
			seen[outcomes[i].ID] = true
			batch = append(batch, i)
		}
		if err := s.complete(ctx, outcomes, batch, applied); err != nil {
			return nil, fmt.Errorf("postgres: complete: %w", err)
		}
		rest = later
	}
	return applied, nil
}

func (s *Store) complete(ctx context.Context, outcomes []store.Outcome, idx []int, applied []bool) error {
	n := len(idx)
	var (
		ids, fences   = make([]int64, n), make([]int64, n)
		states        = make([]string, n)
		runAts        = make([]*time.Time, n)
		refunds       = make([]bool, n)
		errs, results = make([][]byte, n), make([][]byte, n)
	)
	for k, i := range idx {
		o := outcomes[i]
		ids[k], fences[k], states[k] = o.ID, o.Fence, string(o.State)
		runAts[k], refunds[k] = ts(o.RunAt), o.RefundAttempt
		results[k] = jsonResult(o.Result)
		if o.Error != nil {
			e := store.PortableError(*o.Error)
			e.At = e.At.Truncate(time.Microsecond)
			b, err := json.Marshal(e)
			if err != nil {
				return err
			}
			errs[k] = b
		}
	}
	var done []int64
	var notified int64
	err := s.queryPinned(ctx, completeSQL, []any{s.now(), ids, fences, states, runAts, refunds, errs, results},
		func(rs pgx.Rows) error { return scanOne(rs, &done, &notified) })
	if err != nil {
		return err
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
