package sqlite

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/retryplan"
)

// workflowsSQL counts the steps of the newest workflows by state. The inner query walks
// jobs_workflow from the greatest id down and stops after ?3 distinct workflows.
const workflowsSQL = `SELECT workflow, state, count(*), min(created_at) FROM jobs
	WHERE workflow IN (SELECT DISTINCT workflow FROM jobs INDEXED BY jobs_workflow
		WHERE workflow IS NOT NULL AND (?1 = '' OR workflow = ?1) AND (?2 = '' OR workflow < ?2)
		ORDER BY workflow DESC LIMIT ?3)
	GROUP BY workflow, state`

// Workflows counts the steps of workflows by state, newest first.
func (s *Store) Workflows(ctx context.Context, p store.WorkflowListParams) ([]store.WorkflowStats, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = store.ListLimitDefault
	}
	rows, err := s.db.QueryContext(ctx, workflowsSQL, p.ID, p.Before, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: workflows: %w", err)
	}
	byID := make(map[string]*store.WorkflowStats)
	var order []string
	for rows.Next() {
		var id, state string
		var n, created int64
		if err := rows.Scan(&id, &state, &n, &created); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlite: workflows: %w", err)
		}
		w, ok := byID[id]
		if !ok {
			w = &store.WorkflowStats{ID: id, Counts: store.ZeroCounts(), CreatedAt: fromMicros(created)}
			byID[id] = w
			order = append(order, id)
		}
		w.Counts[store.State(state)] = n
		if at := fromMicros(created); at.Before(w.CreatedAt) {
			w.CreatedAt = at
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("sqlite: workflows: %w", err)
	}
	return sortWorkflows(byID, order), nil
}

// sortWorkflows returns the workflows newest (greatest id) first.
func sortWorkflows(byID map[string]*store.WorkflowStats, ids []string) []store.WorkflowStats {
	out := make([]store.WorkflowStats, 0, len(ids))
	for _, id := range ids {
		out = append(out, *byID[id])
	}
	slices.SortFunc(out, func(a, b store.WorkflowStats) int { return strings.Compare(b.ID, a.ID) })
	return out
}

// RetryWorkflow runs the workflow's failed steps again in one transaction.
func (s *Store) RetryWorkflow(ctx context.Context, workflow string) ([]*store.JobRow, error) {
	var out []*store.JobRow
	err := s.write(ctx, func(t *wtx) error {
		out = nil // a request may run twice (see runGroup)
		rows, err := t.query(`SELECT `+jobColumns+` FROM jobs INDEXED BY jobs_workflow WHERE workflow = ? ORDER BY id`, workflow)
		if err != nil {
			return err
		}
		steps, err := scanJobs(rows)
		if err != nil {
			return err
		}
		if len(steps) == 0 {
			return store.ErrNotFound
		}
		plan := make([]retryplan.Step, len(steps))
		states := make(map[int64]store.State, len(steps))
		for i, j := range steps {
			plan[i] = retryplan.Step{ID: j.ID, State: j.State, DependsOn: j.DependsOn, IgnoreFailed: j.IgnoreFailedDeps}
			states[j.ID] = j.State
		}
		var outside []int64
		for _, st := range plan {
			for _, d := range st.DependsOn {
				if _, ok := states[d]; !ok && st.Failed() {
					outside = append(outside, d)
				}
			}
		}
		named, err := jobStates(t, outside)
		if err != nil {
			return err
		}
		maps.Copy(states, named)
		again := retryplan.Again(plan, states)
		c := make(counts)
		for _, j := range steps {
			if !again[j.ID] {
				continue
			}
			var waits []int64
			for _, d := range j.DependsOn {
				if !slices.Contains(waits, d) && retryplan.Waits(d, again, states) {
					waits = append(waits, d)
				}
			}
			r, err := retryStep(t, j, waits)
			if err != nil {
				return err
			}
			c.move(j.Queue, j.State, r.State, 1)
			out = append(out, r)
		}
		for of, deps := range retryplan.Rewait(plan, again) {
			for _, dep := range deps {
				counted, err := stillCounts(t, of, dep)
				if err != nil {
					return err
				}
				if !counted {
					if err := addWait(t, of, dep); err != nil {
						return err
					}
				}
			}
		}
		return c.flush(t)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: retry workflow %s: %w", workflow, err)
	}
	return out, nil
}

// retryStep makes a failed step wait for waits again, or available now when it waits for none.
// Its waits are written as an insert writes them (linkWaits, waitsOn): one that waits for one
// alone names it in waits_on, with no edge (schema 0013).
func retryStep(t *wtx, j *store.JobRow, waits []int64) (*store.JobRow, error) {
	state := store.StateAvailable
	plan := &depPlan{waiting: waits}
	// A cancelled step may have kept its count; linkWaits writes the one its waits take, if any.
	if _, err := t.exec(forgetWaitsSQL, jsonText([]int64{j.ID})); err != nil {
		return nil, err
	}
	if len(waits) > 0 {
		state = store.StatePending
		if err := linkWaits(t, []int{0}, map[int]*depPlan{0: plan}, []store.InsertResult{{Job: j}}); err != nil {
			return nil, err
		}
	} else {
		t.notify(store.Notification{Topic: store.TopicInsert, Queue: j.Queue})
	}
	waitsOn := plan.waitsOn()
	// The edges into it that its waits no longer take are left from its last wait: a
	// dependency whose end is still parked would count it off again.
	var stale []int64
	for _, d := range j.DependsOn {
		if waitsOn != nil || !slices.Contains(waits, d) {
			stale = append(stale, d)
		}
	}
	if len(stale) > 0 {
		if _, err := t.exec(`DELETE FROM job_deps WHERE job_id = ? AND dep_id IN (SELECT value FROM json_each(?))`,
			j.ID, jsonText(stale)); err != nil {
			return nil, err
		}
	}
	if err := forgetParked(t, j.ID); err != nil {
		return nil, err
	}
	// Available now, as Retry makes it; a pending one keeps its RunAt for its release to judge.
	return updateJob(t, `UPDATE jobs SET state = ?1, run_at = CASE WHEN ?1 = 'available' THEN ?2 ELSE run_at END,
			finalized_at = NULL,
			owner = NULL, lease_until = NULL, cancel_requested = 0, max_attempts = max(max_attempts, attempt + 1),
			expires_at = CASE WHEN expires_at <= ?2 THEN NULL ELSE expires_at END, waits_on = ?4,
			unique_key = `+runAgainKeySQL+`
		WHERE id = ?3`, string(state), micros(t.now), j.ID, waitsOn)
}
