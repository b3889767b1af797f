package redis

import (
	"context"
	"fmt"
	"strconv"

	"github.com/rotahq/rota/store"
)

// List merges the id-ordered (state, queue) index sets the filters name, so State and Queue
// filters never scan; a Workflow filter reads that workflow's steps alone. A Kind filter (or a
// State or Queue filter with a Workflow) examines ids in order, at most 2000 per script, and
// List calls again from the script's cursor until the page is full or the sets end.
func (s *Store) List(ctx context.Context, p store.ListParams) ([]*store.JobRow, error) {
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
	var out []*store.JobRow
	for len(out) < limit {
		args := []any{len(p.States)}
		for _, st := range p.States {
			args = append(args, string(st))
		}
		args = append(args, p.Queue, p.Kind, cursor, desc, limit-len(out), p.Workflow)
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
