package sqlite

import (
	"database/sql"
	"errors"
	"strconv"
	"time"

	"github.com/rotahq/rota/store"
)

// ended is a job that has just ended (or been deleted before it ended), whose dependents are
// to be resolved in the same transaction.
type ended struct {
	id      int64
	state   store.State
	deleted bool
}

// unlinkSQL deletes the edges from the ended jobs ?1 (a JSON array of ids) and returns the
// dependent of each: what their ends settle.
const unlinkSQL = `DELETE FROM job_deps WHERE dep_id IN (SELECT value FROM json_each(?1)) RETURNING job_id`

// unwaitSQL deletes the waits of the dependents in ?1 (a JSON object: dependent id → how many of
// the ended jobs it waited for) that those ends leave waiting for nothing: every one when they
// completed (?2), else those that ignore failed dependencies. It returns their ids, the
// dependents to release. Their count is not written down to zero first: a fan-out's release
// writes each step's wait once, not twice.
const unwaitSQL = `DELETE FROM job_waits WHERE job_id IN (
		SELECT w.job_id FROM json_each(?1) d JOIN job_waits w ON w.job_id = CAST(d.key AS INTEGER)
		WHERE w.pending <= d.value AND (?2 OR w.ignore_failed))
	RETURNING job_id`

// countOffSQL takes from each dependent in ?1 (as unwaitSQL's) that many off what it waits for,
// with the same rule: the dependents that still wait after it (unwaitSQL took the others).
const countOffSQL = `UPDATE job_waits SET pending = pending - d.value
	FROM json_each(?1) d
	WHERE job_waits.job_id = CAST(d.key AS INTEGER) AND (?2 OR job_waits.ignore_failed)`

// releaseSQL makes the pending jobs ?1, which wait for nothing more, available, or scheduled
// while their RunAt is ahead, to run no earlier than now (?2).
const releaseSQL = `UPDATE jobs SET state = CASE WHEN run_at > ?2 THEN 'scheduled' ELSE 'available' END,
		run_at = max(run_at, ?2)
	WHERE id IN (SELECT value FROM json_each(?1)) AND state = 'pending'
	RETURNING id, queue, state`

// cancelDependentsSQL ends cancelled the pending jobs ?1 that do not ignore failed dependencies,
// recording why (?4) as an error of their attempt, at now (?2, ?3).
const cancelDependentsSQL = `UPDATE jobs SET state = 'cancelled', finalized_at = ?2,
		errors = json_insert(coalesce(errors, '[]'), '$[#]', json_object('attempt', attempt, 'at', ?3, 'error', ?4))
	WHERE id IN (SELECT job_id FROM job_waits
			WHERE job_id IN (SELECT value FROM json_each(?1)) AND NOT ignore_failed)
		AND state = 'pending'
	RETURNING id, queue, has_dependents`

// resolveDeps resolves the dependents of the ended jobs, and theirs in turn when they end
// cancelled, one generation after another: a chain of any length costs no recursion. The jobs
// that completed are resolved together, a few statements for a whole batch of completions; each
// other end is resolved alone, for its dependents' errors name it. It records the moves in c and
// returns what to announce.
func resolveDeps(x execer, now time.Time, c counts, ends []ended) ([]store.Notification, error) {
	r := &resolver{x: x, c: c, at: micros(now), stamp: now.UTC().Format(time.RFC3339Nano)}
	for len(ends) > 0 {
		var done []int64
		var failed []ended
		for _, e := range ends {
			if e.state == store.StateCompleted && !e.deleted {
				done = append(done, e.id)
			} else {
				failed = append(failed, e)
			}
		}
		ends = nil
		if len(done) > 0 {
			if err := r.resolve(jsonText(done), true, ""); err != nil {
				return nil, err
			}
		}
		for _, e := range failed {
			why := store.DependencyError(e.id, e.state)
			if e.deleted {
				why = store.DependencyDeletedError(e.id)
			}
			if err := r.resolve(jsonText([]int64{e.id}), false, why); err != nil {
				return nil, err
			}
		}
		ends, r.next = r.next, nil
	}
	return r.notes, nil
}

// resolver resolves one generation of ends; next collects the dependents it cancelled that have
// dependents of their own.
type resolver struct {
	x     execer
	c     counts
	at    int64
	stamp string
	notes []store.Notification
	next  []ended
}

// resolve settles the dependents of the ended jobs ids (a JSON array): completed, or failed with
// why for the dependents it cancels. A batch of completions that leaves its dependents waiting,
// the common case of a fan-in, costs three statements: the edges' delete, the look for waits
// that end, and the count; a fan-out's release, whose dependents all stop waiting, the edges'
// delete, the waits' and the release.
func (r *resolver) resolve(ids string, completed bool, why string) error {
	waited := make(map[string]int64) // dependent id → how many of the ended jobs it waited for
	var dependents []int64
	err := r.each(unlinkSQL, []any{ids}, func(rows *sql.Rows) error {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		k := strconv.FormatInt(id, 10)
		if waited[k] == 0 {
			dependents = append(dependents, id)
		}
		waited[k]++
		return nil
	})
	if err != nil || len(dependents) == 0 {
		return err
	}
	var zero, cancelled []int64 // dependents that wait for nothing more; those cancelled
	err = r.each(unwaitSQL, []any{jsonText(waited), completed}, func(rows *sql.Rows) error {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		zero = append(zero, id)
		return nil
	})
	if err != nil {
		return err
	}
	if len(zero) < len(dependents) { // some still wait, or are cancelled below
		if _, err := r.x.exec(countOffSQL, jsonText(waited), completed); err != nil {
			return err
		}
	}
	if len(zero) > 0 {
		err := r.each(releaseSQL, []any{jsonText(zero), r.at}, func(rows *sql.Rows) error {
			var id int64
			var q, state string
			if err := rows.Scan(&id, &q, &state); err != nil {
				return err
			}
			r.c.move(q, store.StatePending, store.State(state), 1)
			if state == string(store.StateAvailable) {
				r.notes = append(r.notes, store.Notification{Topic: store.TopicInsert, Queue: q})
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if !completed {
		err := r.each(cancelDependentsSQL, []any{jsonText(dependents), r.at, r.stamp, why}, func(rows *sql.Rows) error {
			var id int64
			var q string
			var more bool
			if err := rows.Scan(&id, &q, &more); err != nil {
				return err
			}
			cancelled = append(cancelled, id)
			r.c.move(q, store.StatePending, store.StateCancelled, 1)
			r.notes = append(r.notes, store.Notification{Topic: store.TopicFinal, Queue: q, JobID: id})
			if more {
				r.next = append(r.next, ended{id: id, state: store.StateCancelled})
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if len(cancelled) == 0 {
		return nil
	}
	_, err = r.x.exec(`DELETE FROM job_waits WHERE job_id IN (SELECT value FROM json_each(?))`, jsonText(cancelled))
	return err
}

// each runs query and calls row for every row it returns.
func (r *resolver) each(query string, args []any, row func(*sql.Rows) error) error {
	rows, err := r.x.query(query, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
		if err := row(rows); err != nil {
			rows.Close()
			return err
		}
	}
	return errors.Join(rows.Err(), rows.Close())
}

// resolveIn resolves the dependents of ends inside the writer's transaction and flushes the
// counts it moved.
func resolveIn(t *wtx, ends ...ended) error {
	if len(ends) == 0 {
		return nil
	}
	c := make(counts)
	notes, err := resolveDeps(t, t.now, c, ends)
	if err != nil {
		return err
	}
	t.notify(notes...)
	return c.flush(t)
}
