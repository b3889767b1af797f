package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/retryplan"
)

// workflowStepsSQL locks the steps of the workflow $1, in id order.
const workflowStepsSQL = `SELECT j.id, j.state, coalesce(j.depends_on, '{}'), coalesce(j.ignore_failed_deps, false)
	FROM {schema}.workflow_steps w JOIN {schema}.jobs j ON j.id = w.job_id
	WHERE w.workflow = $1 ORDER BY j.id FOR UPDATE OF j`

// depStatesSQL locks the jobs $1 outside the workflow that its retried steps name, and reads
// their states.
const depStatesSQL = `SELECT id, state FROM {schema}.jobs WHERE id = ANY ($1::bigint[]) ORDER BY id FOR NO KEY UPDATE`

// forgetEdgesSQL deletes the edges $1 -> $2 left from the last wait of the retried steps (a
// step cancelled for one dependency kept the edges from the others): each waits anew with the
// edges retryWorkflowSQL makes.
const forgetEdgesSQL = `DELETE FROM {schema}.job_deps d USING unnest($1::bigint[], $2::bigint[]) AS e(dep, job)
	WHERE d.dep_id = e.dep AND d.job_id = e.job`

// rewaitSQL makes the pending steps $2 wait again for the jobs $1 that run again
// (retryplan.Rewait): an edge each, and one more in their counts, unless an edge is left, from
// an end of the job that was parked and not settled, which the step still counts.
const rewaitSQL = `
WITH added AS (
	INSERT INTO {schema}.job_deps (dep_id, job_id)
	SELECT * FROM unnest($1::bigint[], $2::bigint[]) ON CONFLICT DO NOTHING
	RETURNING job_id
)
UPDATE {schema}.jobs SET pending_deps = pending_deps + a.n
FROM (SELECT job_id, count(*) AS n FROM added GROUP BY job_id) a
WHERE jobs.id = a.job_id`

// retryWorkflowSQL makes the steps $5 wait again for $6 jobs each (pending) or run now, with
// the edges $2 -> $3, and marks what they wait for as having dependents: the jobs $4 (updated
// even when marked already, as insertDepsSQL does), and the steps $5 for which $7 says so. It
// returns the steps as they now are and wakes the queues of those that run now.
var retryWorkflowSQL = `
WITH edges AS (
	INSERT INTO {schema}.job_deps (dep_id, job_id)
	SELECT * FROM unnest($2::bigint[], $3::bigint[]) ON CONFLICT DO NOTHING
),
marked AS (
	UPDATE {schema}.jobs SET has_dependents = true WHERE id = ANY ($4::bigint[])
),
retried AS (
	UPDATE {schema}.jobs SET
		state = CASE WHEN r.r_waits > 0 THEN 'pending' ELSE 'available' END,
		pending_deps = r.r_waits,
		-- A step that waits keeps its run_at, which its release compares with the time then.
		run_at = CASE WHEN r.r_waits > 0 THEN run_at ELSE {now} END,
		finalized_at = NULL, owner = NULL, lease_until = NULL,
		cancel_requested = false, max_attempts = greatest(max_attempts, attempt + 1),
		expires_at = CASE WHEN expires_at <= {now} THEN NULL ELSE expires_at END,
		-- A step keeps the edges of its last end that were parked and not settled (see
		-- migration 016): the dependents they lead to wait for its next end.
		has_dependents = r.r_awaited OR EXISTS (SELECT 1 FROM {schema}.job_deps d WHERE d.dep_id = jobs.id),
		unique_states = ` + keepKeyAmong("(CASE WHEN r.r_waits > 0 THEN 'pending' ELSE 'available' END)",
	`EXISTS (SELECT 1 FROM unnest($5::bigint[], $6::integer[]) AS r2(id, waits) WHERE r2.id = p.id
			AND (CASE WHEN r2.waits > 0 THEN 'pending' ELSE 'available' END) = ANY (p.unique_states))`) + `
	FROM unnest($5::bigint[], $6::integer[], $7::boolean[]) AS r(r_id, r_waits, r_awaited)
	WHERE jobs.id = r.r_id
	RETURNING ` + jobColumns + `,
		CASE WHEN state = 'available' THEN pg_notify({insert_channel}, queue)::text END AS woken
)
SELECT ` + jobColumns + ` FROM retried ORDER BY id`

// retryPlan is what RetryWorkflow changes.
type retryPlan struct {
	ids     []int64 // the steps run again
	waits   []int32 // how many jobs each waits for
	awaited []bool  // whether another of them waits for it
	// oldDeps -> oldJobs are the edges of their last wait, edgeDeps -> edgeJobs those of the new.
	oldDeps, oldJobs, edgeDeps, edgeJobs []int64
	marked                               []int64 // jobs not run again that gain a dependent
	// rewaitDeps -> rewaitJobs are the waits of the steps left pending anew (retryplan.Rewait).
	rewaitDeps, rewaitJobs []int64
}

// planRetry decides which of steps run again (retryplan.Again) and what each waits for, given
// the states of the jobs they name.
func planRetry(steps []retryplan.Step, states map[int64]store.State) retryPlan {
	again := retryplan.Again(steps, states)
	var p retryPlan
	awaited := make(map[int64]bool)
	for _, st := range steps {
		if !again[st.ID] {
			continue
		}
		n := int32(0)
		for k, dep := range st.DependsOn {
			p.oldDeps, p.oldJobs = append(p.oldDeps, dep), append(p.oldJobs, st.ID)
			if slices.Contains(st.DependsOn[:k], dep) || !retryplan.Waits(dep, again, states) {
				continue
			}
			n++
			p.edgeDeps, p.edgeJobs = append(p.edgeDeps, dep), append(p.edgeJobs, st.ID)
			if again[dep] {
				awaited[dep] = true
			} else {
				p.marked = append(p.marked, dep)
			}
		}
		p.ids, p.waits = append(p.ids, st.ID), append(p.waits, n)
	}
	for of, deps := range retryplan.Rewait(steps, again) {
		for _, dep := range deps {
			p.rewaitDeps, p.rewaitJobs = append(p.rewaitDeps, dep), append(p.rewaitJobs, of)
			awaited[dep] = true
		}
	}
	for _, id := range p.ids {
		p.awaited = append(p.awaited, awaited[id])
	}
	return p
}

// RetryWorkflow runs the steps of workflow that ended without completing again (planRetry), in
// one READ COMMITTED transaction that locks every step, and the jobs outside the workflow they
// name, before it reads their states.
func (s *Store) RetryWorkflow(ctx context.Context, workflow string) ([]*store.JobRow, error) {
	var out []*store.JobRow
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		out = nil
		rs, err := tx.Query(ctx, s.sql(workflowStepsSQL), workflow)
		if err != nil {
			return err
		}
		steps, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (retryplan.Step, error) {
			var st retryplan.Step
			err := r.Scan(&st.ID, &st.State, &st.DependsOn, &st.IgnoreFailed)
			return st, err
		})
		if err != nil {
			return err
		}
		if len(steps) == 0 {
			return store.ErrNotFound
		}
		states := make(map[int64]store.State, len(steps))
		for _, st := range steps {
			states[st.ID] = st.State
		}
		var outside []int64
		for _, st := range steps {
			for _, dep := range st.DependsOn {
				if _, ok := states[dep]; !ok && st.Failed() {
					outside = append(outside, dep)
				}
			}
		}
		if len(outside) > 0 {
			rs, err := tx.Query(ctx, s.sql(depStatesSQL), outside)
			if err != nil {
				return err
			}
			var id int64
			var state store.State
			if _, err := pgx.ForEachRow(rs, []any{&id, &state}, func() error {
				states[id] = state
				return nil
			}); err != nil {
				return err
			}
		}
		p := planRetry(steps, states)
		if len(p.ids) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, s.sql(forgetEdgesSQL), p.oldDeps, p.oldJobs); err != nil {
			return err
		}
		if len(p.rewaitDeps) > 0 {
			if _, err := tx.Exec(ctx, s.sql(rewaitSQL), p.rewaitDeps, p.rewaitJobs); err != nil {
				return err
			}
		}
		rs, err = tx.Query(ctx, s.sql(retryWorkflowSQL), s.now(), p.edgeDeps, p.edgeJobs, p.marked, p.ids, p.waits, p.awaited)
		if err != nil {
			return err
		}
		out, err = scanJobs(rs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: retry workflow %q: %w", workflow, unavailable(err))
	}
	return out, nil
}
