package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/rotahq/rota/store"
)

// Heartbeat extends the leases of owner's running jobs in one statement; it walks only the
// running rows (jobs_running), whatever the size of the table.
func (s *Store) Heartbeat(ctx context.Context, owner string, leaseFor time.Duration) ([]int64, error) {
	var cancel []int64
	err := s.write(ctx, func(t *wtx) error {
		cancel = nil // a request may run twice (see runGroup)
		rows, err := t.query(`UPDATE jobs INDEXED BY jobs_running SET lease_until = ?
			WHERE state = 'running' AND owner = ?
			RETURNING id, cancel_requested`, micros(t.now.Add(leaseFor)), owner)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var requested bool
			if err := rows.Scan(&id, &requested); err != nil {
				return err
			}
			if requested {
				cancel = append(cancel, id)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: heartbeat: %w", err)
	}
	return cancel, nil
}

// lostSQL finds the running jobs whose lease has passed, oldest lease first, through
// jobs_running; it reads what RescueState and RescueError decide from.
const lostSQL = `SELECT id, attempt, max_attempts, cancel_requested, coalesce(owner, '')
	FROM jobs INDEXED BY jobs_running
	WHERE state = 'running' AND lease_until < ?
	ORDER BY lease_until, id LIMIT ?`

// rescueSQL ends the attempt of one lost job in the state store.RescueState chose, recording
// store.RescueError for the attempt with the claim's owner and running time to now (?7). A job
// left to run again is due now (?2); a final one keeps its RunAt and is finalized now (?3).
// updateJob adds the RETURNING clause.
const rescueSQL = `UPDATE jobs SET state = ?1, run_at = coalesce(?2, run_at), finalized_at = ?3,
		errors = json_insert(coalesce(errors, '[]'), '$[#]', json_object('attempt', attempt, 'at', ?4, 'error', ?5,
			'node', owner, 'duration_ns', (?7 - attempted_at) * 1000)),
		owner = NULL, lease_until = NULL
	WHERE id = ?6 AND state = 'running'`

// lostJob is what a rescue reads of a job before it decides how the job ends.
type lostJob struct {
	id, attempt, maxAttempts int64
	cancelRequested          bool
	owner                    string
}

// Rescue settles parked dependents (settle.go), then ends the attempts of running jobs whose
// lease has passed, oldest lease first. It reads
// them and ends them in one request of the writer, whose write lock keeps every other process
// from claiming, completing or heartbeating them in between.
func (s *Store) Rescue(ctx context.Context, limit int) ([]*store.JobRow, error) {
	if limit <= 0 {
		return nil, nil
	}
	// First what a Store that stopped left parked; a failure is logged: it must not keep lost
	// jobs from rescue.
	s.settleLeft(ctx)
	var out []*store.JobRow
	err := s.write(ctx, func(t *wtx) error {
		out = nil // a request may run twice (see runGroup)
		lost, err := findLost(t, limit)
		if err != nil {
			return err
		}
		now, at := micros(t.now), truncate(t.now).Format(time.RFC3339Nano)
		c := make(counts)
		for _, l := range lost {
			state := store.RescueState(int(l.attempt), int(l.maxAttempts), l.cancelRequested)
			runAt, finalized := any(now), any(nil)
			if state.Final() {
				runAt, finalized = nil, now
			}
			j, err := updateJob(t, rescueSQL, string(state), runAt, finalized, at, store.RescueError(l.owner), l.id, now)
			if err != nil {
				return err
			}
			out = append(out, j)
			c.move(j.Queue, store.StateRunning, j.State, 1)
			if j.State.Final() {
				t.notify(store.Notification{Topic: store.TopicFinal, Queue: j.Queue, JobID: j.ID})
				if err := resolveIn(t, ended{id: j.ID, state: j.State}); err != nil {
					return err
				}
			} else {
				t.notify(store.Notification{Topic: store.TopicInsert, Queue: j.Queue})
			}
		}
		return c.flush(t)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: rescue: %w", err)
	}
	return out, nil
}

// findLost reads up to limit lost jobs, all of them before any is changed.
func findLost(t *wtx, limit int) ([]lostJob, error) {
	rows, err := t.query(lostSQL, micros(t.now), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var lost []lostJob
	for rows.Next() {
		var l lostJob
		if err := rows.Scan(&l.id, &l.attempt, &l.maxAttempts, &l.cancelRequested, &l.owner); err != nil {
			return nil, err
		}
		lost = append(lost, l)
	}
	return lost, rows.Err()
}
