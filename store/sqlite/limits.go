package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/claimorder"
	"github.com/rotahq/rota/store/internal/limitplan"
)

var _ store.Limiter = (*Store)(nil)

// SetLimit creates, replaces or removes the limit for (l.Scope, l.Name). Taking a limit's Rate
// away forgets the starts recorded under it.
func (s *Store) SetLimit(ctx context.Context, l store.Limit) error {
	if err := l.Validate(); err != nil {
		return fmt.Errorf("sqlite: set limit: %w", err)
	}
	err := s.write(ctx, func(t *wtx) error {
		if l.Removes() {
			if _, err := t.exec(`DELETE FROM limits WHERE scope = ? AND name = ?`, string(l.Scope), l.Name); err != nil {
				return err
			}
		} else if _, err := t.exec(`INSERT INTO limits (scope, name, max_running, rate, period) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (scope, name) DO UPDATE SET max_running = excluded.max_running,
				rate = excluded.rate, period = excluded.period`,
			string(l.Scope), l.Name, l.MaxRunning, l.Rate, l.Period.Microseconds()); err != nil {
			return err
		}
		if l.Rate > 0 {
			return nil
		}
		_, err := t.exec(`DELETE FROM limit_starts WHERE scope = ? AND name = ?`, string(l.Scope), l.Name)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: set limit: %w", err)
	}
	return nil
}

// ListLimits returns every limit, by scope then name (in byte order).
func (s *Store) ListLimits(ctx context.Context) ([]store.Limit, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT scope, name, max_running, rate, period FROM limits ORDER BY scope, name`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list limits: %w", err)
	}
	defer rows.Close()
	var out []store.Limit
	for rows.Next() {
		var l store.Limit
		var period int64
		if err := rows.Scan(&l.Scope, &l.Name, &l.MaxRunning, &l.Rate, &period); err != nil {
			return nil, fmt.Errorf("sqlite: list limits: %w", err)
		}
		l.Period = time.Duration(period) * time.Microsecond
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list limits: %w", err)
	}
	return out, nil
}

// limitUsageSQL reads the limits that apply to a claim, with what counts against each; claims
// run it only when gatesSQL found a limit that may apply. The counts are read only for the
// limits found: running jobs of a queue from queue_counts, of a kind from jobs_running (one
// entry per running job), starts from limit_starts_window. The writer holds the write lock, so
// nothing changes between this count and the claim.
const limitUsageSQL = `SELECT l.scope, l.name, l.max_running, l.rate, l.period,
		CASE WHEN l.max_running = 0 THEN 0
			WHEN l.scope = 'queue' THEN coalesce((SELECT n FROM queue_counts
				WHERE queue = l.name AND state = 'running'), 0)
			ELSE (SELECT count(*) FROM jobs INDEXED BY jobs_running WHERE state = 'running' AND kind = l.name)
		END,
		CASE WHEN l.rate = 0 THEN 0
			ELSE (SELECT coalesce(sum(n), 0) FROM limit_starts INDEXED BY limit_starts_window
				WHERE scope = l.scope AND name = l.name AND at > :now - l.period)
		END
	FROM limits l
	WHERE (l.scope = 'queue' AND l.name = :queue)
		OR (l.scope = 'kind' AND l.name IN (SELECT value FROM json_each(:kinds)))`

func limitUsage(t *wtx, p store.ClaimParams, kinds string, now int64) ([]limitplan.Usage, error) {
	rows, err := t.query(limitUsageSQL, sql.Named("now", now), sql.Named("queue", p.Queue), sql.Named("kinds", kinds))
	if err != nil {
		return nil, err
	}
	return scanUsage(rows)
}

// scanUsage reads the rows of limitUsageSQL and closes them.
func scanUsage(rows *sql.Rows) ([]limitplan.Usage, error) {
	defer rows.Close()
	var out []limitplan.Usage
	for rows.Next() {
		var u limitplan.Usage
		var period int64
		if err := rows.Scan(&u.Scope, &u.Name, &u.MaxRunning, &u.Rate, &period, &u.Running, &u.Started); err != nil {
			return nil, err
		}
		u.Period = time.Duration(period) * time.Microsecond
		out = append(out, u)
	}
	return out, rows.Err()
}

// LimitUsage returns the queue's and the kind's limits with what counts against them now, read
// as a claim reads them, outside the writer.
func (s *Store) LimitUsage(ctx context.Context, queue, kind string) ([]store.LimitUsage, error) {
	rows, err := s.db.QueryContext(ctx, limitUsageSQL+` ORDER BY l.scope DESC`, sql.Named("now", micros(s.clk.Now())),
		sql.Named("queue", queue), sql.Named("kinds", jsonText([]string{kind})))
	if err != nil {
		return nil, fmt.Errorf("sqlite: limit usage: %w", err)
	}
	out, err := scanUsage(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: limit usage: %w", err)
	}
	return out, nil
}

// recordStarts adds the claim's starts under rate limits, and forgets the starts that left their
// limit's window: a limit keeps at most Rate rows.
func recordStarts(t *wtx, starts []limitplan.Start, now int64) error {
	for _, st := range starts {
		if _, err := t.exec(`DELETE FROM limit_starts WHERE scope = ? AND name = ? AND at <= ?`,
			string(st.Scope), st.Name, now-st.Period); err != nil {
			return err
		}
		if _, err := t.exec(`INSERT INTO limit_starts (scope, name, at, n) VALUES (?, ?, ?, ?)`,
			string(st.Scope), st.Name, now, st.N); err != nil {
			return err
		}
	}
	return nil
}

// limitedCandidatesSQL selects the next jobs a limited claim may take, with their kinds, so that
// the claim can keep to each kind's cap before it updates anything. Expired jobs are skipped here
// and ended by expire afterwards, as in the unlimited claim.
const limitedCandidatesSQL = `SELECT id, kind FROM jobs INDEXED BY jobs_claim
	WHERE queue = :queue AND state = 'available' AND run_at <= :now
		AND kind IN (SELECT value FROM json_each(:kinds))
		AND (expires_at IS NULL OR expires_at > :now)
	ORDER BY ` + claimorder.SQL + `
	LIMIT :limit`

const claimIDsSQL = `UPDATE jobs SET state = 'running', attempt = attempt + 1, fence = fence + 1,
		owner = :owner, attempted_by = :owner, lease_until = :lease, attempted_at = :now
	WHERE id IN (SELECT value FROM json_each(:ids))
	RETURNING ` + claimedColumns

// claimLimited claims within the limits in usage, in rounds (see limitplan.Plan), records the
// starts under rate limits and the moves in c.
func claimLimited(t *wtx, p store.ClaimParams, kinds string, now int64, usage []limitplan.Usage,
	c counts) ([]*store.JobRow, error) {
	plan := limitplan.New(p.Queue, p.Kinds, p.Max, usage)
	var out []*store.JobRow
	for {
		allowed, caps := plan.Kinds()
		if len(allowed) == 0 {
			break
		}
		asked := plan.Budget
		ids, err := pickWithin(t, p.Queue, allowed, caps, asked, now)
		if err != nil {
			return nil, err
		}
		var got []*store.JobRow
		if len(ids) > 0 {
			lease := micros(t.now.Add(p.LeaseFor))
			rows, err := t.query(claimIDsSQL, sql.Named("owner", p.Owner), sql.Named("lease", lease),
				sql.Named("now", now), sql.Named("ids", jsonText(ids)))
			if err != nil {
				return nil, err
			}
			if got, err = scanClaimed(rows, p.Owner, lease, now); err != nil {
				return nil, err
			}
			out = append(out, got...)
			c.move(p.Queue, store.StateAvailable, store.StateRunning, int64(len(got)))
		}
		if !plan.Took(got, asked) {
			break
		}
	}
	if len(out) < p.Max {
		expired, err := expire(t, p, kinds, now, p.Max)
		if err != nil {
			return nil, err
		}
		c.move(p.Queue, store.StateAvailable, store.StateExpired, int64(expired))
	}
	// RETURNING comes in no set order.
	claimorder.Sort(out)
	return out, recordStarts(t, plan.Starts(), now)
}

// pickWithin returns the ids of the first jobs in claim order, up to budget, taking no more of a
// kind than its cap: the others are skipped, not taken in their place.
func pickWithin(t *wtx, queue string, kinds []string, caps []int, budget int, now int64) ([]int64, error) {
	rows, err := t.query(limitedCandidatesSQL, sql.Named("queue", queue), sql.Named("now", now),
		sql.Named("kinds", jsonText(kinds)), sql.Named("limit", budget))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	left := make(map[string]int, len(kinds))
	for i, k := range kinds {
		left[k] = caps[i]
	}
	var ids []int64
	for rows.Next() {
		var id int64
		var kind string
		if err := rows.Scan(&id, &kind); err != nil {
			return nil, err
		}
		if left[kind] > 0 {
			left[kind]--
			ids = append(ids, id)
		}
	}
	return ids, rows.Err()
}
