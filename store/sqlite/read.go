package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rotahq/rota/store"
)

// Reads run on the read pool: in WAL mode they see the last commit and never wait for the writer.

// Get returns one job.
func (s *Store) Get(ctx context.Context, id int64) (*store.JobRow, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ?`, id)
	if err != nil {
		return nil, fmt.Errorf("sqlite: get %d: %w", id, err)
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: get %d: %w", id, err)
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("sqlite: get %d: %w", id, store.ErrNotFound)
	}
	return jobs[0], nil
}

// List returns a page of jobs in id order. It walks the primary key from the cursor and filters
// as it goes, so a page costs the rows it skips, not the size of the table; no index serves the
// tag, schedule, args or created filters, which are tested on each row walked.
func (s *Store) List(ctx context.Context, p store.ListParams) ([]*store.JobRow, error) {
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("sqlite: list: %w", err)
	}
	where, args := listFilters(p)
	order := "ASC"
	if p.AfterID > 0 {
		if p.Desc {
			where = append(where, `id < ?`)
		} else {
			where = append(where, `id > ?`)
		}
		args = append(args, p.AfterID)
	}
	if p.Desc {
		order = "DESC"
	}
	limit := p.Limit
	if limit <= 0 {
		limit = store.ListLimitDefault
	}
	q := `SELECT ` + jobColumns + ` FROM jobs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY id ` + order + ` LIMIT ?`
	rows, err := s.db.QueryContext(ctx, q, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list: %w", err)
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list: %w", err)
	}
	return jobs, nil
}

// QueueStats reports the jobs of each queue by state. The counts are kept as jobs change state
// (queue_counts), so that it reads a few rows whatever the size of the table: producers call it
// before best-effort inserts.
func (s *Store) QueueStats(ctx context.Context) ([]store.QueueStats, error) {
	out, err := s.queueStats(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: queue stats: %w", err)
	}
	return out, nil
}

func (s *Store) queueStats(ctx context.Context) ([]store.QueueStats, error) {
	byQueue := make(map[string]*store.QueueStats)
	stats := func(q string) *store.QueueStats {
		st, ok := byQueue[q]
		if !ok {
			st = &store.QueueStats{Queue: q, Counts: make(map[store.State]int64, len(store.States))}
			for _, state := range store.States {
				st.Counts[state] = 0
			}
			byQueue[q] = st
		}
		return st
	}
	rows, err := s.db.QueryContext(ctx, `SELECT queue, state, n FROM queue_counts WHERE n != 0`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var q, state string
		var n int64
		if err := rows.Scan(&q, &state, &n); err != nil {
			return nil, err
		}
		stats(q).Counts[store.State(state)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	paused, err := s.db.QueryContext(ctx, `SELECT name FROM paused_queues`)
	if err != nil {
		return nil, err
	}
	defer paused.Close()
	for paused.Next() {
		var q string
		if err := paused.Scan(&q); err != nil {
			return nil, err
		}
		stats(q).Paused = true
	}
	if err := paused.Err(); err != nil {
		return nil, err
	}
	out := make([]store.QueueStats, 0, len(byQueue))
	for _, st := range byQueue {
		if st.Counts[store.StateAvailable] > 0 {
			if st.OldestAvailable, err = s.oldestAvailable(ctx, st.Queue); err != nil {
				return nil, err
			}
		}
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Queue < out[j].Queue })
	return out, nil
}

// oldestAvailableSQL finds the oldest RunAt among a queue's available jobs in a few index seeks.
// jobs_claim sorts by priority before run_at, so it hops from one priority to the next lower one
// (a seek each, and queues have few priorities) and takes the first run_at of each.
const oldestAvailableSQL = `WITH RECURSIVE p (priority) AS (
		SELECT max(priority) FROM jobs INDEXED BY jobs_claim WHERE queue = :queue AND state = 'available'
		UNION ALL
		SELECT (SELECT max(priority) FROM jobs INDEXED BY jobs_claim
			WHERE queue = :queue AND state = 'available' AND priority < p.priority)
		FROM p WHERE p.priority IS NOT NULL
	)
	SELECT min((SELECT min(run_at) FROM jobs INDEXED BY jobs_claim
		WHERE queue = :queue AND state = 'available' AND priority = p.priority))
	FROM p WHERE p.priority IS NOT NULL`

func (s *Store) oldestAvailable(ctx context.Context, queue string) (time.Time, error) {
	var oldest sql.NullInt64
	err := s.db.QueryRowContext(ctx, oldestAvailableSQL, sql.Named("queue", queue)).Scan(&oldest)
	if err != nil || !oldest.Valid {
		return time.Time{}, err
	}
	return fromMicros(oldest.Int64), nil
}

// QueueLoad is QueueStats for one queue. The per-queue counters make QueueStats itself cheap;
// this is for callers that ask store.QueueLoader.
func (s *Store) QueueLoad(ctx context.Context, queue string) (store.QueueStats, error) {
	all, err := s.QueueStats(ctx)
	if err != nil {
		return store.QueueStats{}, err
	}
	for _, q := range all {
		if q.Queue == queue {
			return q, nil
		}
	}
	return store.QueueStats{Queue: queue, Counts: map[store.State]int64{}}, nil
}
