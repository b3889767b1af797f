package redis

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/rotahq/rota/store"
)

// List merges the id-ordered (state, queue) index sets the filters name, so State and Queue
// filters never scan; a Workflow filter reads that workflow's steps alone. No index serves
// Kind, Tag, Schedule, Owner, the args filters or the created range (nor a State or Queue filter with a
// Workflow): the script walks those sets in id order and reads each job's hash, at most 2000
// jobs per script so that one call never holds Redis long, and List calls again from the
// script's cursor until the page is full or the sets end. A page of a rare match therefore
// costs every job of the named states and queues walked to find it, in scripts of 2000.
func (s *Store) List(ctx context.Context, p store.ListParams) ([]*store.JobRow, error) {
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("redis: list: %w", err)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = store.ListLimitDefault
	}
	cursor := ""
	if p.AfterID > 0 {
		cursor = strconv.FormatInt(p.AfterID, 10)
	}
	desc := ""
	if p.Desc {
		desc = "1"
	}
	// Each state names one index set per queue: a state named twice would merge its set twice
	// and list every job of it twice.
	states := slices.Compact(slices.Sorted(slices.Values(p.States)))
	var out []*store.JobRow
	for len(out) < limit {
		args := []any{len(states)}
		for _, st := range states {
			args = append(args, string(st))
		}
		args = append(args, p.Queue, p.Kind, cursor, desc, limit-len(out), p.Workflow,
			p.Tag, p.Schedule, p.ArgsContains, p.ArgsPath, p.ArgsValue,
			microsOrEmpty(p.CreatedAfter), microsOrEmpty(p.CreatedBefore), p.Owner)
		v, err := s.run(ctx, scriptList, args...)
		if err != nil {
			return nil, err
		}
		r, _ := v.([]any)
		if len(r) != 2 {
			return nil, fmt.Errorf("redis: list: unexpected reply %v", v)
		}
		rows, err := decodeJobs(r[0])
		if err != nil {
			return nil, fmt.Errorf("redis: list: %w", err)
		}
		out = append(out, rows...)
		if cursor = toStr(r[1]); cursor == "" {
			break
		}
	}
	return out, nil
}
