package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/claimorder"
	"github.com/rotahq/rota/store/internal/limitplan"
)

// Claim takes up to p.Max due jobs of p.Queue in claim order. It runs in the writer, so two
// claims of this process never overlap, and other processes wait on the write lock: no job is
// claimed twice, and the running jobs and starts a limit counts cannot change between the count
// and the claim.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) ([]*store.JobRow, error) {
	if p.Max <= 0 || len(p.Kinds) == 0 {
		return nil, nil
	}
	kinds := jsonText(p.Kinds)
	var out []*store.JobRow
	err := s.write(ctx, func(t *wtx) error {
		var err error
		out, err = claim(t, p, kinds)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim: %w", err)
	}
	return out, nil
}

// promoteBatch bounds how many due jobs one claim moves to available. After an outage there may
// be many; they are promoted oldest first over a few claims rather than in one long write.
const promoteBatch = 1000

// promoteSQL makes due jobs of one state (scheduled or retryable) available. It is what lets a
// delayed job start on time with no separate scheduler: the claim that could take it promotes it
// first. One state at a time, so that the change of counts is known.
const promoteSQL = `UPDATE jobs SET state = 'available'
	WHERE id IN (SELECT id FROM jobs INDEXED BY jobs_due
		WHERE queue = :queue AND state IN ('scheduled', 'retryable') AND state = :state AND run_at <= :now
		ORDER BY run_at LIMIT :limit)`

// candidatesSQL selects the first :limit available jobs of a queue, in claim order, walking
// jobs_claim (queue, priority, run_at); kind and expiry are read from the rows it points to.
// An available job may have a future RunAt (one handed back with a time): it waits.
const candidatesSQL = `SELECT id FROM jobs INDEXED BY jobs_claim
	WHERE queue = :queue AND state = 'available' AND run_at <= :now
		AND kind IN (SELECT value FROM json_each(:kinds))
	ORDER BY ` + claimorder.SQL + `
	LIMIT :limit`

// claimSQLs and expireSQLs are claimSQL and expireSQL with the limit written in (see byLimit).
var claimSQLs, expireSQLs = newByLimit(claimSQL), newByLimit(expireSQL)

// claimSQL claims the live jobs among the candidates. Expired ones are left for expireSQL.
const claimSQL = `UPDATE jobs SET state = 'running', attempt = attempt + 1, fence = fence + 1,
		owner = :owner, attempted_by = :owner, lease_until = :lease, attempted_at = :now
	WHERE id IN (` + candidatesSQL + `) AND (expires_at IS NULL OR expires_at > :now)
	RETURNING ` + claimedColumns

// expireSQL ends the expired jobs among the candidates.
const expireSQL = `UPDATE jobs SET state = 'expired', finalized_at = :now
	WHERE id IN (` + candidatesSQL + `) AND expires_at <= :now
	RETURNING id, has_dependents`

// gatesSQL reads whether the queue is paused and whether a limit may apply to the claim: one on
// the queue, or one on any kind. Which kinds is asked only then, by limitUsage: matching the
// claim's kinds (json_each) costs several times these probes, and every claim would pay it.
const gatesSQL = `SELECT EXISTS (SELECT 1 FROM paused_queues WHERE name = :queue),
	EXISTS (SELECT 1 FROM limits WHERE scope = 'queue' AND name = :queue)
		OR EXISTS (SELECT 1 FROM limits WHERE scope = 'kind')`

// claim promotes the queue's due jobs, then claims the available ones, within the limits that
// apply to the claim when there are any.
func claim(t *wtx, p store.ClaimParams, kinds string) ([]*store.JobRow, error) {
	paused, mayLimit, err := gates(t, p.Queue)
	if err != nil || paused {
		return nil, err
	}
	now := micros(t.now)
	c := make(counts)
	for _, state := range []store.State{store.StateScheduled, store.StateRetryable} {
		r, err := t.exec(promoteSQL, sql.Named("queue", p.Queue), sql.Named("state", string(state)),
			sql.Named("now", now), sql.Named("limit", promoteBatch))
		if err != nil {
			return nil, err
		}
		n, err := r.RowsAffected()
		if err != nil {
			return nil, err
		}
		c.move(p.Queue, state, store.StateAvailable, n)
	}
	var usage []limitplan.Usage
	if mayLimit {
		if usage, err = limitUsage(t, p, kinds, now); err != nil {
			return nil, err
		}
	}
	var out []*store.JobRow
	if len(usage) == 0 {
		out, err = claimAvailable(t, p, kinds, now, c)
	} else {
		out, err = claimLimited(t, p, kinds, now, usage, c)
	}
	if err != nil {
		return nil, err
	}
	return out, c.flush(t)
}

// claimAvailable claims up to p.Max available jobs and records the moves in c, in statements of
// the sizes the writer keeps prepared (see piece): one to three. When a statement gets fewer jobs
// than it asked for, the queue ran dry or expired jobs stood in the way: it ends those and claims
// again. Each such turn expires at least one job, so the loop ends.
func claimAvailable(t *wtx, p store.ClaimParams, kinds string, now int64, c counts) ([]*store.JobRow, error) {
	var out []*store.JobRow
	for len(out) < p.Max {
		want := piece(p.Max - len(out))
		lease := micros(t.now.Add(p.LeaseFor))
		query, args := claimSQLs.limited(want, sql.Named("owner", p.Owner), sql.Named("lease", lease),
			sql.Named("now", now), sql.Named("queue", p.Queue), sql.Named("kinds", kinds))
		rows, err := t.query(query, args...)
		if err != nil {
			return nil, err
		}
		got, err := scanClaimed(rows, p.Owner, lease, now)
		if err != nil {
			return nil, err
		}
		// RETURNING comes in no set order.
		claimorder.Sort(got)
		out = append(out, got...)
		c.move(p.Queue, store.StateAvailable, store.StateRunning, int64(len(got)))
		if len(got) == want {
			continue
		}
		expired, err := expire(t, p, kinds, now, want)
		if err != nil || expired == 0 {
			return out, err
		}
		c.move(p.Queue, store.StateAvailable, store.StateExpired, int64(expired))
	}
	return out, nil
}

func gates(t *wtx, queue string) (paused, mayLimit bool, err error) {
	rows, err := t.query(gatesSQL, sql.Named("queue", queue))
	if err != nil {
		return false, false, err
	}
	defer rows.Close()
	if rows.Next() {
		err = rows.Scan(&paused, &mayLimit)
	}
	return paused, mayLimit, errors.Join(err, rows.Err())
}

func expire(t *wtx, p store.ClaimParams, kinds string, now int64, limit int) (int, error) {
	query, args := expireSQLs.limited(limit, sql.Named("now", now), sql.Named("queue", p.Queue), sql.Named("kinds", kinds))
	rows, err := t.query(query, args...)
	if err != nil {
		return 0, err
	}
	n := 0
	var ends []ended
	for rows.Next() {
		var id int64
		var dependents bool
		if err := rows.Scan(&id, &dependents); err != nil {
			rows.Close()
			return n, err
		}
		n++
		t.notify(store.Notification{Topic: store.TopicFinal, Queue: p.Queue, JobID: id})
		if dependents {
			ends = append(ends, ended{id: id, state: store.StateExpired})
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return n, err
	}
	return n, resolveIn(t, ends...)
}
