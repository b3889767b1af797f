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

// Rescue ends the attempts of running jobs whose lease has passed, oldest lease first.
func (s *Store) Rescue(ctx context.Context, limit int) ([]*store.JobRow, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []*store.JobRow
	err := s.write(ctx, func(t *wtx) error {
		now := micros(t.now)
		// A job a user asked to cancel while it ran ends cancelled; the others are retried while
		// they have attempts left.
		rows, err := t.query(`UPDATE jobs SET
				state = CASE WHEN cancel_requested THEN 'cancelled'
					WHEN attempt >= max_attempts THEN 'discarded' ELSE 'retryable' END,
				run_at = CASE WHEN cancel_requested OR attempt >= max_attempts THEN run_at ELSE ?1 END,
				finalized_at = CASE WHEN cancel_requested OR attempt >= max_attempts THEN ?1 END,
				errors = json_insert(coalesce(errors, '[]'), '$[#]', json_object(
					'attempt', attempt, 'at', ?2,
					'error', 'lease expired: owner ' || coalesce(owner, '') || ' stopped renewing it')),
				owner = NULL, lease_until = NULL
			WHERE id IN (SELECT id FROM jobs INDEXED BY jobs_running
				WHERE state = 'running' AND lease_until < ?1
				ORDER BY lease_until LIMIT ?3)
			RETURNING `+jobColumns, now, t.now.UTC().Format(time.RFC3339Nano), limit)
		if err != nil {
			return err
		}
		if out, err = scanJobs(rows); err != nil {
			return err
		}
		c := make(counts)
		for _, j := range out {
			c.move(j.Queue, store.StateRunning, j.State, 1)
			if j.State.Final() {
				t.notify(store.Notification{Topic: store.TopicFinal, Queue: j.Queue, JobID: j.ID})
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
