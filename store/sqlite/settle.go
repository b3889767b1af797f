package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/rotahq/rota/store"
)

// A completion resolves at most a bounded number of its ends' dependency edges in its own
// transaction (WithSettleBatch): a fan-out of ten thousand steps would otherwise release them
// all before the completion commits, holding the writer, and with it every claim of the
// process, for the whole release. What it leaves is parked in job_settling (schema 0012) and
// settled in further transactions, each as bounded, before Complete returns; other requests of
// the writer run between them, so the first steps run while the rest are released.
//
// An end that is parked is settled as it ended, at the time it is settled: a delete of the job
// afterwards does not change it. A job made to run again (Retry, RetryWorkflow) loses its parked
// entry and keeps its edges: they wait for its next end. A Store that stops before it settled
// leaves the rest to the next rescue pass (Rescue settles first).

// SettleBatchDefault is how many dependency edges one transaction resolves unless
// WithSettleBatch says otherwise: a few milliseconds of the writer's time for a fan-out's
// releases.
const SettleBatchDefault = 1000

// settleEnds is how many parked ends one settling transaction takes up.
const settleEnds = 100

// takeParkedSQL takes up to ?1 parked ends out of job_settling: the settling resolves them and
// parks again what it leaves.
const takeParkedSQL = `DELETE FROM job_settling WHERE dep_id IN (
		SELECT dep_id FROM job_settling ORDER BY dep_id LIMIT ?1)
	RETURNING dep_id, state`

// settleOnce settles, in one transaction of the writer, up to settleEnds parked ends within
// the store's budget, and reports whether any is left parked.
func (s *Store) settleOnce(ctx context.Context) (more bool, err error) {
	err = s.write(ctx, func(t *wtx) error {
		if t.w.settleLeft == 0 {
			// Requests before it in its transaction used the batch up: the next one settles.
			more = true
			return nil
		}
		ends, err := takeParked(t)
		if err != nil || len(ends) == 0 {
			more = false
			return err
		}
		parked, err := resolveBounded(t, ends...)
		// Others' parked ends are their Stores' to settle: more says whether this one may
		// have left some.
		more = parked || len(ends) == settleEnds
		return err
	})
	return more, err
}

// reopenedSQL finds which of the jobs ?1 (a JSON array) exist and have not ended.
const reopenedSQL = `SELECT id FROM jobs WHERE id IN (SELECT value FROM json_each(?1))
	AND state NOT IN ('completed', 'cancelled', 'discarded', 'expired')`

// takeParked takes parked ends out of job_settling. An end whose job runs again is dropped,
// not settled: whatever made it run again should have forgotten it (forgetParked), and its
// edges wait for its next end.
func takeParked(t *wtx) ([]ended, error) {
	var ends []ended
	var ids []int64
	err := scanRows(t, takeParkedSQL, []any{settleEnds}, func(rows *sql.Rows) error {
		var e ended
		var state string
		if err := rows.Scan(&e.id, &state); err != nil {
			return err
		}
		e.state, e.deleted = store.State(state), state == ""
		ends = append(ends, e)
		ids = append(ids, e.id)
		return nil
	})
	if err != nil || len(ends) == 0 {
		return nil, err
	}
	reopened := make(map[int64]bool)
	err = scanRows(t, reopenedSQL, []any{jsonText(ids)}, func(rows *sql.Rows) error {
		var id int64
		err := rows.Scan(&id)
		reopened[id] = true
		return err
	})
	if err != nil || len(reopened) == 0 {
		return ends, err
	}
	return slices.DeleteFunc(ends, func(e ended) bool { return reopened[e.id] }), nil
}

// settleAll settles parked ends until none is left.
func (s *Store) settleAll(ctx context.Context) error {
	for {
		more, err := s.settleOnce(ctx)
		if err != nil {
			return fmt.Errorf("settle parked dependents: %w", err)
		}
		if !more {
			return nil
		}
	}
}

// afterParked settles what a call parked before the call returns, so that its caller sees its
// dependents resolved, as when one transaction resolved them all. A failure is logged, not
// returned: the call itself committed, and the next rescue pass settles what is left.
func (s *Store) afterParked(ctx context.Context, call string) {
	if err := s.settleAll(ctx); err != nil {
		s.log.Warn("rota: sqlite settle failed; the next rescue settles what is left", "after", call, "err", err)
	}
}

// settleLeft settles what Stores that stopped left parked. It looks with a read first: the
// rescuer of every node calls it every round, and an idle store takes no write lock for it.
func (s *Store) settleLeft(ctx context.Context) {
	var left bool
	if err := s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM job_settling)`).Scan(&left); err != nil {
		s.log.Warn("rota: sqlite settle failed; the next rescue settles what is left", "after", "rescue", "err", err)
		return
	}
	if left {
		s.afterParked(ctx, "rescue")
	}
}

// forgetParked forgets the parked end of job id, which is made to run again: the edges it left
// wait for its next end.
func forgetParked(x execer, id int64) error {
	_, err := x.exec(`DELETE FROM job_settling WHERE dep_id = ?`, id)
	return err
}

// isParked reports whether job id's end is parked.
func isParked(x execer, id int64) (bool, error) {
	rows, err := x.query(`SELECT 1 FROM job_settling WHERE dep_id = ?`, id)
	if err != nil {
		return false, err
	}
	found := rows.Next()
	return found, errors.Join(rows.Err(), rows.Close())
}
