package redis

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rotahq/rota/store"
)

var _ store.StatsKeeper = (*Store)(nil)

// AddStats adds the rows in one script (minutesadd.lua).
func (s *Store) AddStats(ctx context.Context, rows []store.Stats) error {
	if len(rows) == 0 {
		return nil
	}
	in := make([][]any, len(rows))
	for i, r := range rows {
		in[i] = []any{micros(r.Minute.Truncate(time.Minute)), r.Node, r.Queue, r.Kind,
			r.Completed, r.Failed, r.Discarded, r.Cancelled, nonNil(r.Latency), nonNil(r.Duration)}
	}
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("redis: add stats: %w", err)
	}
	_, err = s.run(ctx, scriptMinutesAdd, string(b))
	return err
}

// Stats returns every node's rows of minutes at or after since.
func (s *Store) Stats(ctx context.Context, since time.Time) ([]store.Stats, error) {
	v, err := s.run(ctx, scriptMinutesRead, micros(since))
	if err != nil {
		return nil, err
	}
	list, _ := v.([]any)
	out := make([]store.Stats, 0, len(list))
	for _, x := range list {
		r, _ := x.([]any)
		if len(r) != 3 {
			return nil, fmt.Errorf("redis: stats: unexpected row %v", x)
		}
		row, err := statsRow(toStr(r[0]), toStr(r[1]), toStr(r[2]))
		if err != nil {
			return nil, fmt.Errorf("redis: stats: %w", err)
		}
		out = append(out, row)
	}
	return out, nil
}

// statsRow reads one field of a minute's hash and its value (see minutesadd.lua).
func statsRow(minute, field, value string) (store.Stats, error) {
	var r store.Stats
	var err error
	if r.Minute, err = fromMicros(minute); err != nil {
		return r, err
	}
	var names []string
	if err := json.Unmarshal([]byte(field), &names); err != nil || len(names) != 3 {
		return r, fmt.Errorf("minute %s: field %q is not [node, queue, kind]", minute, field)
	}
	r.Node, r.Queue, r.Kind = names[0], names[1], names[2]
	var v []json.RawMessage
	if err := json.Unmarshal([]byte(value), &v); err != nil || len(v) != 6 {
		return r, fmt.Errorf("minute %s: value %q is not six counts", minute, value)
	}
	for i, dst := range []*int64{&r.Completed, &r.Failed, &r.Discarded, &r.Cancelled} {
		if err := json.Unmarshal(v[i], dst); err != nil {
			return r, fmt.Errorf("minute %s: %w", minute, err)
		}
	}
	for i, dst := range []*[]int64{&r.Latency, &r.Duration} {
		raw := v[4+i]
		if bytes.Equal(raw, []byte("{}")) { // Lua's cjson writes an empty array so
			continue
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return r, fmt.Errorf("minute %s: %w", minute, err)
		}
		if len(*dst) == 0 {
			*dst = nil
		}
	}
	return r, nil
}

// PruneStats deletes the rows of minutes before before.
func (s *Store) PruneStats(ctx context.Context, before time.Time) (int, error) {
	v, err := s.run(ctx, scriptMinutesPrune, micros(before))
	if err != nil {
		return 0, err
	}
	return int(toInt(v)), nil
}

func nonNil(b []int64) []int64 {
	if b == nil {
		return []int64{}
	}
	return b
}
