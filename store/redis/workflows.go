package redis

import (
	"context"
	"fmt"

	"github.com/rotahq/rota/store"
)

// A workflow is the sorted set wfs (every workflow's id, score 0, so that ZRANGE BYLEX pages
// through them in byte order), wf:<id> (its steps' ids, scored by id, which List with a
// Workflow filter reads) and the hash wfc:<id> (its steps per state). Whatever inserts, moves or
// drops a step keeps them (prelude.lua's move and drop, insertdeps.lua); the last step dropped
// takes the workflow with it.

// Workflows counts the steps of workflows by state, newest (greatest id) first, from the counts
// the transitions keep: one script, O(workflows on the page).
func (s *Store) Workflows(ctx context.Context, p store.WorkflowListParams) ([]store.WorkflowStats, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = store.ListLimitDefault
	}
	v, err := s.run(ctx, scriptWorkflows, p.ID, p.Before, limit)
	if err != nil {
		return nil, err
	}
	list, _ := v.([]any)
	out := make([]store.WorkflowStats, 0, len(list))
	for _, x := range list {
		r, _ := x.([]any)
		if len(r) != 3 {
			return nil, fmt.Errorf("redis: workflows: unexpected row %v", x)
		}
		w := store.WorkflowStats{ID: toStr(r[0]), Counts: make(map[store.State]int64, len(store.States))}
		if w.CreatedAt, err = fromMicros(toStr(r[1])); err != nil {
			return nil, fmt.Errorf("redis: workflows: %s: %w", w.ID, err)
		}
		for _, st := range store.States {
			w.Counts[st] = 0
		}
		counts, err := fields(r[2])
		if err != nil {
			return nil, fmt.Errorf("redis: workflows: %s: %w", w.ID, err)
		}
		for st, n := range counts {
			w.Counts[store.State(st)] = toInt(n)
		}
		out = append(out, w)
	}
	return out, nil
}

// RetryWorkflow runs a workflow's discarded, cancelled and expired steps again, in one script:
// each waits again for what it still needs, or is available now, which the script announces.
func (s *Store) RetryWorkflow(ctx context.Context, workflow string) ([]*store.JobRow, error) {
	v, err := s.run(ctx, scriptRetryWF, workflow)
	if err != nil {
		return nil, err
	}
	if toStr(v) == "NOTFOUND" {
		return nil, fmt.Errorf("redis: retry workflow %q: %w", workflow, store.ErrNotFound)
	}
	rows, err := decodeJobs(v)
	if err != nil {
		return nil, fmt.Errorf("redis: retry workflow %q: %w", workflow, err)
	}
	return rows, nil
}
