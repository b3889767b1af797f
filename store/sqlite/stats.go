package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rotahq/rota/store"
)

var _ store.StatsKeeper = (*Store)(nil)

// AddStats adds the rows to the stats table in one transaction. Histograms are JSON arrays,
// which SQLite cannot add bucket by bucket: each row's is read and added to in Go, on the
// writer, where no other write comes between the read and the write.
func (s *Store) AddStats(ctx context.Context, rows []store.Stats) error {
	if len(rows) == 0 {
		return nil
	}
	err := s.write(ctx, func(t *wtx) error {
		for _, r := range rows {
			minute := micros(r.Minute.Truncate(time.Minute))
			have, err := t.statsRow(minute, r)
			if err != nil {
				return err
			}
			have.Add(r)
			if _, err := t.exec(`INSERT OR REPLACE INTO stats (minute, node, queue, kind, completed, failed, discarded, cancelled, latency, duration)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, minute, r.Node, r.Queue, r.Kind,
				have.Completed, have.Failed, have.Discarded, have.Cancelled, jsonText(nonNil(have.Latency)), jsonText(nonNil(have.Duration))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: add stats: %w", err)
	}
	return nil
}

// statsRow is the row of r's node, minute, queue and kind, zero when there is none.
func (t *wtx) statsRow(minute int64, r store.Stats) (store.Stats, error) {
	var have store.Stats
	rows, err := t.query(`SELECT completed, failed, discarded, cancelled, latency, duration
		FROM stats WHERE minute = ? AND node = ? AND queue = ? AND kind = ?`, minute, r.Node, r.Queue, r.Kind)
	if err != nil {
		return have, err
	}
	defer rows.Close()
	if rows.Next() {
		var latency, duration string
		if err := rows.Scan(&have.Completed, &have.Failed, &have.Discarded, &have.Cancelled, &latency, &duration); err != nil {
			return have, err
		}
		if err := unmarshalBuckets(latency, duration, &have); err != nil {
			return have, err
		}
	}
	return have, rows.Err()
}

// Stats returns every node's rows of minutes at or after since.
func (s *Store) Stats(ctx context.Context, since time.Time) ([]store.Stats, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT minute, node, queue, kind, completed, failed, discarded, cancelled, latency, duration
		FROM stats WHERE minute >= ?`, micros(since))
	if err != nil {
		return nil, fmt.Errorf("sqlite: stats: %w", err)
	}
	defer rows.Close()
	var out []store.Stats
	for rows.Next() {
		var r store.Stats
		var minute int64
		var latency, duration string
		if err := rows.Scan(&minute, &r.Node, &r.Queue, &r.Kind, &r.Completed, &r.Failed, &r.Discarded, &r.Cancelled, &latency, &duration); err != nil {
			return nil, fmt.Errorf("sqlite: stats: %w", err)
		}
		if err := unmarshalBuckets(latency, duration, &r); err != nil {
			return nil, fmt.Errorf("sqlite: stats: %w", err)
		}
		r.Minute = fromMicros(minute)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: stats: %w", err)
	}
	return out, nil
}

// PruneStats deletes the rows of minutes before before.
func (s *Store) PruneStats(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(t *wtx) error {
		res, err := t.exec(`DELETE FROM stats WHERE minute < ?`, micros(before))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: prune stats: %w", err)
	}
	return int(n), nil
}

func unmarshalBuckets(latency, duration string, r *store.Stats) error {
	if err := json.Unmarshal([]byte(latency), &r.Latency); err != nil {
		return fmt.Errorf("latency: %w", err)
	}
	if err := json.Unmarshal([]byte(duration), &r.Duration); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	if len(r.Latency) == 0 {
		r.Latency = nil
	}
	if len(r.Duration) == 0 {
		r.Duration = nil
	}
	return nil
}

func nonNil(b []int64) []int64 {
	if b == nil {
		return []int64{}
	}
	return b
}
