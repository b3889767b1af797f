package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotahq/rota/store"
)

var _ store.StatsKeeper = (*Store)(nil)

// addBucketsSQL adds the JSON arrays of bucket counts a and b, padding the shorter with zeros.
func addBucketsSQL(a, b string) string {
	return `coalesce((SELECT jsonb_agg(coalesce(x.v::bigint, 0) + coalesce(y.v::bigint, 0) ORDER BY coalesce(x.i, y.i))
		FROM jsonb_array_elements(` + a + `) WITH ORDINALITY AS x(v, i)
		FULL JOIN jsonb_array_elements(` + b + `) WITH ORDINALITY AS y(v, i) ON x.i = y.i), '[]')`
}

// addStatsSQL upserts the rows in one statement; a row already there is added to.
var addStatsSQL = `
INSERT INTO {schema}.stats AS s (minute, node, queue, kind, completed, failed, discarded, cancelled, latency, duration)
SELECT * FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[],
	$7::bigint[], $8::bigint[], $9::jsonb[], $10::jsonb[])
ON CONFLICT (minute, node, queue, kind) DO UPDATE SET
	completed = s.completed + excluded.completed,
	failed = s.failed + excluded.failed,
	discarded = s.discarded + excluded.discarded,
	cancelled = s.cancelled + excluded.cancelled,
	latency = ` + addBucketsSQL("s.latency", "excluded.latency") + `,
	duration = ` + addBucketsSQL("s.duration", "excluded.duration")

// AddStats adds the rows in one statement.
func (s *Store) AddStats(ctx context.Context, rows []store.Stats) error {
	rows = store.MergeStats(rows) // an upsert may not change one row twice
	if len(rows) == 0 {
		return nil
	}
	n := len(rows)
	minutes := make([]time.Time, n)
	nodes, queues, kinds := make([]string, n), make([]string, n), make([]string, n)
	completed, failed, discarded, cancelled := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	latency, duration := make([][]byte, n), make([][]byte, n)
	for i, r := range rows {
		minutes[i], nodes[i], queues[i], kinds[i] = r.Minute.Truncate(time.Minute), r.Node, r.Queue, r.Kind
		completed[i], failed[i], discarded[i], cancelled[i] = r.Completed, r.Failed, r.Discarded, r.Cancelled
		latency[i], duration[i] = bucketsJSON(r.Latency), bucketsJSON(r.Duration)
	}
	if _, err := s.pool.Exec(ctx, s.sql(addStatsSQL), minutes, nodes, queues, kinds,
		completed, failed, discarded, cancelled, latency, duration); err != nil {
		return fmt.Errorf("postgres: add stats: %w", unavailable(err))
	}
	return nil
}

// Stats returns every node's rows of minutes at or after since.
func (s *Store) Stats(ctx context.Context, since time.Time) ([]store.Stats, error) {
	rs, err := s.pool.Query(ctx, s.sql(`SELECT minute, node, queue, kind, completed, failed, discarded, cancelled, latency, duration
		FROM {schema}.stats WHERE minute >= $1`), since)
	if err != nil {
		return nil, fmt.Errorf("postgres: stats: %w", unavailable(err))
	}
	out, err := pgx.CollectRows(rs, func(row pgx.CollectableRow) (store.Stats, error) {
		var r store.Stats
		var latency, duration []byte
		if err := row.Scan(&r.Minute, &r.Node, &r.Queue, &r.Kind, &r.Completed, &r.Failed, &r.Discarded, &r.Cancelled, &latency, &duration); err != nil {
			return r, err
		}
		r.Minute = r.Minute.UTC()
		if err := json.Unmarshal(latency, &r.Latency); err != nil {
			return r, fmt.Errorf("latency: %w", err)
		}
		if err := json.Unmarshal(duration, &r.Duration); err != nil {
			return r, fmt.Errorf("duration: %w", err)
		}
		if len(r.Latency) == 0 {
			r.Latency = nil
		}
		if len(r.Duration) == 0 {
			r.Duration = nil
		}
		return r, nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: stats: %w", unavailable(err))
	}
	return out, nil
}

// PruneStats deletes the rows of minutes before before.
func (s *Store) PruneStats(ctx context.Context, before time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.stats WHERE minute < $1`), before)
	if err != nil {
		return 0, fmt.Errorf("postgres: prune stats: %w", unavailable(err))
	}
	return int(tag.RowsAffected()), nil
}

func bucketsJSON(b []int64) []byte {
	if b == nil {
		return []byte("[]")
	}
	out, _ := json.Marshal(b) // []int64 always marshals
	return out
}
