package sqlite

import (
	"context"
	"errors"
	"fmt"

	"github.com/rotahq/rota/store"
)

// getForUpdate reads a job inside the writer's transaction.
func getForUpdate(t execer, id int64) (*store.JobRow, error) {
	rows, err := t.query(`SELECT `+jobColumns+` FROM jobs WHERE id = ?`, id)
	if err != nil {
		return nil, err
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, store.ErrNotFound
	}
	return jobs[0], nil
}

// updateJob runs an UPDATE of one job that ends in RETURNING jobColumns.
func updateJob(t *wtx, query string, args ...any) (*store.JobRow, error) {
	rows, err := t.query(query+` RETURNING `+jobColumns, args...)
	if err != nil {
		return nil, err
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, err
	}
	if len(jobs) != 1 {
		return nil, fmt.Errorf("update touched %d jobs, want 1", len(jobs))
	}
	return jobs[0], nil
}

// moveOne records that job j went to state to.
func moveOne(t *wtx, j *store.JobRow, to store.State) error {
	c := make(counts)
	c.move(j.Queue, j.State, to, 1)
	return c.flush(t)
}

// deleteJobs runs a DELETE of jobs and takes them off the counts.
func deleteJobs(t *wtx, query string, args ...any) (int64, error) {
	rows, err := t.query(query+` RETURNING queue, state`, args...)
	if err != nil {
		return 0, err
	}
	c := make(counts)
	var n int64
	for rows.Next() {
		var queue, state string
		if err := rows.Scan(&queue, &state); err != nil {
			rows.Close()
			return n, err
		}
		c.add(queue, store.State(state), -1)
		n++
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return n, err
	}
	return n, c.flush(t)
}

// Cancel ends a waiting job, or asks the node running it to stop it.
func (s *Store) Cancel(ctx context.Context, id int64) (*store.JobRow, error) {
	var out *store.JobRow
	err := s.write(ctx, func(t *wtx) error {
		j, err := getForUpdate(t, id)
		switch {
		case err != nil:
			return err
		case j.State.Final():
			out = j
			return nil
		case j.State == store.StateRunning:
			out, err = updateJob(t, `UPDATE jobs SET cancel_requested = 1 WHERE id = ?`, id)
			return err
		}
		if out, err = updateJob(t, `UPDATE jobs SET state = 'cancelled', finalized_at = ? WHERE id = ?`,
			micros(t.now), id); err != nil {
			return err
		}
		t.notify(store.Notification{Topic: store.TopicFinal, Queue: j.Queue, JobID: id})
		if err := moveOne(t, j, store.StateCancelled); err != nil {
			return err
		}
		return resolveIn(t, ended{id: id, state: store.StateCancelled})
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: cancel %d: %w", id, err)
	}
	return out, nil
}

// Retry makes a job that is not running available now, with one more attempt if it has none left.
func (s *Store) Retry(ctx context.Context, id int64) (*store.JobRow, error) {
	var out *store.JobRow
	err := s.write(ctx, func(t *wtx) error {
		j, err := getForUpdate(t, id)
		if err != nil {
			return err
		}
		if j.State == store.StateRunning {
			return store.ErrJobRunning
		}
		if out, err = updateJob(t, `UPDATE jobs SET state = 'available', run_at = ?1, finalized_at = NULL,
				owner = NULL, lease_until = NULL, cancel_requested = 0, max_attempts = max(max_attempts, attempt + 1),
				expires_at = CASE WHEN expires_at <= ?1 THEN NULL ELSE expires_at END,
				unique_key = `+runAgainKeySQL+`
			WHERE id = ?2`, micros(t.now), id); err != nil {
			return err
		}
		if err := forgetParked(t, id); err != nil {
			return err
		}
		t.notify(store.Notification{Topic: store.TopicInsert, Queue: j.Queue})
		return moveOne(t, j, store.StateAvailable)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: retry %d: %w", id, err)
	}
	return out, nil
}

// Delete removes a job that is not running. A job that ended with dependents left parked (its
// completing Store stopped before settling them) has them settled as it ended.
func (s *Store) Delete(ctx context.Context, id int64) error {
	var parked bool
	err := s.write(ctx, func(t *wtx) error {
		j, err := getForUpdate(t, id)
		switch {
		case err != nil:
			return err
		case j.State == store.StateRunning:
			return store.ErrJobRunning
		case !j.State.Final():
			if err := resolveIn(t, ended{id: id, deleted: true}); err != nil {
				return err
			}
		default:
			if parked, err = isParked(t, id); err != nil {
				return err
			}
		}
		if j.State == store.StatePending {
			if _, err := t.exec(`DELETE FROM job_waits WHERE job_id = ?`, id); err != nil {
				return err
			}
		}
		_, err = deleteJobs(t, `DELETE FROM jobs WHERE id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete %d: %w", id, err)
	}
	if parked {
		s.afterParked(ctx, "delete")
	}
	return nil
}

// Prune deletes the oldest finished jobs first. A Limit of zero or less means no limit; the
// pruner should pass one, since the writer does nothing else while a Prune runs. Only jobs in
// one of p.States go: none when it is empty.
func (s *Store) Prune(ctx context.Context, p store.PruneParams) (int, error) {
	if len(p.States) == 0 {
		return 0, nil
	}
	states := jsonText(p.States)
	limit := p.Limit
	if limit <= 0 {
		limit = -1
	}
	var n int64
	err := s.write(ctx, func(t *wtx) error {
		var err error
		n, err = deleteJobs(t, `DELETE FROM jobs WHERE id IN (
				SELECT id FROM jobs INDEXED BY jobs_finalized
				WHERE finalized_at < ? AND state IN (SELECT value FROM json_each(?))
				ORDER BY finalized_at LIMIT ?)`, micros(p.Before), states, limit)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: prune: %w", err)
	}
	return int(n), nil
}

// PauseQueue stops claims from queue, for every process on the file.
func (s *Store) PauseQueue(ctx context.Context, queue string) error {
	err := s.write(ctx, func(t *wtx) error {
		_, err := t.exec(`INSERT INTO paused_queues (name) VALUES (?) ON CONFLICT DO NOTHING`, queue)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: pause %s: %w", queue, err)
	}
	return nil
}

// ResumeQueue lets claims take from queue again.
func (s *Store) ResumeQueue(ctx context.Context, queue string) error {
	err := s.write(ctx, func(t *wtx) error {
		r, err := t.exec(`DELETE FROM paused_queues WHERE name = ?`, queue)
		if err != nil {
			return err
		}
		if n, err := r.RowsAffected(); err == nil && n > 0 {
			// Wake the idle nodes for the queue's jobs, as PostgreSQL and Redis do.
			t.notify(store.Notification{Topic: store.TopicInsert, Queue: queue})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: resume %s: %w", queue, err)
	}
	return nil
}
