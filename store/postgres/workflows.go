package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotahq/rota/store"
)

// Workflows are found through workflow_steps, (workflow COLLATE "C", job id) for every job that
// has one: a workflow's steps are one range of its key, and the workflows, newest first, are
// found by stepping from one workflow id to the next below it, one index probe each, never
// reading the steps of the workflows they pass over. PostgreSQL has no skip scan to do that for
// a DISTINCT.

// workflowCountsSQL counts the steps of the workflow $1 by state.
const workflowCountsSQL = `SELECT $1::text, j.state, count(*), min(j.created_at)
	FROM {schema}.workflow_steps w JOIN {schema}.jobs j ON j.id = w.job_id
	WHERE w.workflow = $1 GROUP BY j.state`

// workflowPageSQL counts the steps of the $1 workflows with the greatest ids ({before}: below
// $2), by state. The recursive part finds the next id below the last one through the key; the
// LIMIT stops the recursion once the page is full.
const workflowPageSQL = `
WITH RECURSIVE ids(id) AS (
	(SELECT workflow FROM {schema}.workflow_steps {before} ORDER BY workflow DESC LIMIT 1)
	UNION ALL
	SELECT (SELECT workflow FROM {schema}.workflow_steps WHERE workflow < ids.id
		ORDER BY workflow DESC LIMIT 1)
	FROM ids WHERE ids.id IS NOT NULL
),
page AS (SELECT id FROM ids WHERE id IS NOT NULL LIMIT $1)
SELECT page.id, c.state, c.n, c.created FROM page CROSS JOIN LATERAL (
	SELECT j.state, count(*) AS n, min(j.created_at) AS created
	FROM {schema}.workflow_steps w JOIN {schema}.jobs j ON j.id = w.job_id
	WHERE w.workflow = page.id GROUP BY j.state) c`

// Workflows counts the steps of workflows by state, newest (greatest id, in byte order) first.
func (s *Store) Workflows(ctx context.Context, p store.WorkflowListParams) ([]store.WorkflowStats, error) {
	var rs pgx.Rows
	var err error
	switch {
	case p.ID != "":
		rs, err = s.pool.Query(ctx, s.sql(workflowCountsSQL), p.ID)
	default:
		limit := p.Limit
		if limit <= 0 {
			limit = store.ListLimitDefault
		}
		args := []any{limit}
		before := ""
		if p.Before != "" {
			before, args = `WHERE workflow < $2`, append(args, p.Before)
		}
		rs, err = s.pool.Query(ctx, s.sql(strings.Replace(workflowPageSQL, "{before}", before, 1)), args...)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: workflows: %w", unavailable(err))
	}
	stats, err := scanWorkflows(rs)
	if err != nil {
		return nil, fmt.Errorf("postgres: workflows: %w", unavailable(err))
	}
	return stats, nil
}

// scanWorkflows gathers rows of (workflow, state, count, first created) into stats, newest
// workflow first, and closes rs.
func scanWorkflows(rs pgx.Rows) ([]store.WorkflowStats, error) {
	defer rs.Close()
	var stats []store.WorkflowStats
	byID := make(map[string]int)
	for rs.Next() {
		var (
			id, state string
			n         int64
			created   time.Time
		)
		if err := rs.Scan(&id, &state, &n, &created); err != nil {
			return nil, err
		}
		k, ok := byID[id]
		if !ok {
			k, byID[id] = len(stats), len(stats)
			stats = append(stats, store.WorkflowStats{ID: id, Counts: store.ZeroCounts(), CreatedAt: created})
		}
		stats[k].Counts[store.State(state)] = n
		if created.Before(stats[k].CreatedAt) {
			stats[k].CreatedAt = created
		}
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(stats, func(a, b store.WorkflowStats) int { return strings.Compare(b.ID, a.ID) })
	return stats, nil
}
