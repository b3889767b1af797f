package sqlite

import (
	"database/sql"
	"errors"
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

// depsOf is the dependents of the ended jobs ?1 (a JSON array of ids), through their edges.
const depsOf = `(SELECT job_id FROM job_deps WHERE dep_id IN (SELECT value FROM json_each(?1)))`

// countOffSQL counts the ended jobs ?1 off the dependents that waited for them: every one when
// they completed (?2), else those that ignore failed dependencies. A dependent may wait for
// several of them.
const countOffSQL = `UPDATE job_waits SET pending = pending - (SELECT count(*) FROM job_deps d
		WHERE d.job_id = job_waits.job_id AND d.dep_id IN (SELECT value FROM json_each(?1)))
	WHERE job_id IN ` + depsOf + ` AND (?2 OR ignore_failed)`

// releaseSQL makes the pending dependents of ?1 that wait for nothing more available, or
// scheduled while their RunAt is ahead, to run no earlier than now (?2).
const releaseSQL = `UPDATE jobs SET state = CASE WHEN run_at > ?2 THEN 'scheduled' ELSE 'available' END,
		run_at = max(run_at, ?2)
	WHERE id IN (SELECT job_id FROM job_waits WHERE job_id IN ` + depsOf + ` AND pending <= 0)
		AND state = 'pending'
	RETURNING id, queue, state`

// cancelDependentsSQL ends cancelled the pending dependents of ?1 that do not ignore its
// failure, recording why (?4) as an error of their attempt, at now (?2, ?3).
const cancelDependentsSQL = `UPDATE jobs SET state = 'cancelled', finalized_at = ?2,
		errors = json_insert(coalesce(errors, '[]'), '$[#]', json_object('attempt', attempt, 'at', ?3, 'error', ?4))
	WHERE id IN (SELECT job_id FROM job_waits WHERE job_id IN ` + depsOf + ` AND NOT ignore_failed)
		AND state = 'pending'
	RETURNING id, queue, has_dependents`

// forgetSQL drops what the ends of ?1 settled: the waits of their dependents that wait no more
// (released, or cancelled for them) and their edges.
var forgetSQL = []string{
	`DELETE FROM job_waits WHERE job_id IN ` + depsOf + `
		AND job_id NOT IN (SELECT id FROM jobs WHERE id IN ` + depsOf + ` AND state = 'pending')`,
	`DELETE FROM job_deps WHERE dep_id IN (SELECT value FROM json_each(?1))`,
}

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
// why for the dependents it cancels.
func (r *resolver) resolve(ids string, completed bool, why string) error {
	if _, err := r.x.exec(countOffSQL, ids, completed); err != nil {
		return err
	}
	err := r.each(releaseSQL, []any{ids, r.at}, func(rows *sql.Rows) error {
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
	if !completed {
		err := r.each(cancelDependentsSQL, []any{ids, r.at, r.stamp, why}, func(rows *sql.Rows) error {
			var id int64
			var q string
			var more bool
			if err := rows.Scan(&id, &q, &more); err != nil {
				return err
			}
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
	for _, q := range forgetSQL {
		if _, err := r.x.exec(q, ids); err != nil {
			return err
		}
	}
	return nil
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
