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

// unlinkSomeSQL is unlinkSQL for at most ?2 edges: those a bounded transaction may still
// resolve.
const unlinkSomeSQL = `DELETE FROM job_deps WHERE (dep_id, job_id) IN (
		SELECT dep_id, job_id FROM job_deps WHERE dep_id IN (SELECT value FROM json_each(?1)) LIMIT ?2)
	RETURNING job_id`

// releaseWaitersSQL releases up to ?3 (-1: all) of the pending jobs that wait for one of the
// completed jobs ?1 (a JSON array) alone (waits_on, schema 0013), to run no earlier than now
// (?2), as releaseSQL does: one statement over the index, no edge to delete.
const releaseWaitersSQL = `UPDATE jobs SET state = CASE WHEN run_at > ?2 THEN 'scheduled' ELSE 'available' END,
		run_at = max(run_at, ?2), waits_on = NULL
	WHERE id IN (SELECT id FROM jobs INDEXED BY jobs_waits_on
		WHERE waits_on IN (SELECT value FROM json_each(?1)) AND state = 'pending' LIMIT ?3)
	RETURNING id, queue, state`

// waitersSQL reads up to ?2 (-1: all) of the pending jobs that wait for one of the jobs ?1 alone:
// those a failed end cancels, or releases when they ignore it.
const waitersSQL = `SELECT id FROM jobs INDEXED BY jobs_waits_on
	WHERE waits_on IN (SELECT value FROM json_each(?1)) AND state = 'pending' LIMIT ?2`

// parkSQL parks the ends ?1 (a JSON object: id → the state it ended in, empty for a job deleted
// before it ended) that still have edges or jobs waiting for them alone, for a later
// transaction to settle (settle.go).
const parkSQL = `INSERT OR IGNORE INTO job_settling (dep_id, state)
	SELECT CAST(key AS INTEGER), value FROM json_each(?1)
	WHERE EXISTS (SELECT 1 FROM job_deps WHERE dep_id = CAST(key AS INTEGER))
		OR EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_waits_on
			WHERE waits_on = CAST(key AS INTEGER) AND state = 'pending')`

// waitsSQL reads the counts of the dependents ?1 (a JSON array): how many jobs each still waits
// for, and whether it ignores failed ones. Only a job that waits for more than one has a count;
// one that waits for one (a fan-out's step) has none, and the end of that one releases it: a
// count written at its insert and deleted at its release was a third of what releasing a
// fan-out's step cost.
const waitsSQL = `SELECT job_id, pending, ignore_failed FROM job_waits
	WHERE job_id IN (SELECT value FROM json_each(?1))`

// forgetWaitsSQL deletes the counts of the jobs ?1 (a JSON array): those that wait for nothing
// more, or no longer wait.
const forgetWaitsSQL = `DELETE FROM job_waits WHERE job_id IN (SELECT value FROM json_each(?1))`

// countOffSQL takes from each dependent in ?1 (a JSON object: dependent id → how many of the
// ended jobs it waited for) that many off what it waits for.
const countOffSQL = `UPDATE job_waits SET pending = pending - d.value
	FROM json_each(?1) d
	WHERE job_waits.job_id = CAST(d.key AS INTEGER)`

// releaseSQL makes the pending jobs ?1, which wait for nothing more, available, or scheduled
// while their RunAt is ahead, to run no earlier than now (?2): all of them when their
// dependencies completed (?3), else those that ignore failed dependencies.
const releaseSQL = `UPDATE jobs SET state = CASE WHEN run_at > ?2 THEN 'scheduled' ELSE 'available' END,
		run_at = max(run_at, ?2), waits_on = NULL
	WHERE id IN (SELECT value FROM json_each(?1)) AND state = 'pending' AND (?3 OR ignore_failed_deps)
	RETURNING id, queue, state`

// cancelDependentsSQL ends cancelled the pending jobs ?1 that do not ignore failed dependencies,
// recording why (?4) as an error of their attempt, at now (?2, ?3).
const cancelDependentsSQL = `UPDATE jobs SET state = 'cancelled', finalized_at = ?2, waits_on = NULL,
		errors = json_insert(coalesce(errors, '[]'), '$[#]', json_object('attempt', attempt, 'at', ?3, 'error', ?4))
	WHERE id IN (SELECT value FROM json_each(?1)) AND state = 'pending' AND NOT ignore_failed_deps
	RETURNING id, queue, has_dependents`

// unbounded is the budget of a resolution that resolves every edge of its ends.
const unbounded = -1

// resolveDeps resolves the dependents of the ended jobs, and theirs in turn when they end
// cancelled, one generation after another: a chain of any length costs no recursion. The jobs
// that completed are resolved together, a few statements for a whole batch of completions; each
// other end is resolved alone, for its dependents' errors name it. It records the moves in c and
// returns what to announce.
//
// A budget other than unbounded is how many edges it may resolve: the ends whose edges it
// leaves are parked in job_settling, and parked says so; left is what remains of the budget.
// Each edge is deleted as it is counted, and a job that waits for one alone (waits_on) leaves
// pending as it is resolved, so however the settling is split, a dependent counts each
// dependency off once.
func resolveDeps(x execer, now time.Time, c counts, ends []ended, budget int) (notes []store.Notification, left int, parked bool, err error) {
	r := &resolver{x: x, c: c, at: micros(now), stamp: truncate(now).Format(time.RFC3339Nano), budget: budget}
	for len(ends) > 0 {
		var done, failed []ended
		for _, e := range ends {
			if e.state == store.StateCompleted && !e.deleted {
				done = append(done, e)
			} else {
				failed = append(failed, e)
			}
		}
		if len(done) > 0 {
			if err := r.resolve(done, true, ""); err != nil {
				return nil, 0, false, err
			}
		}
		for _, e := range failed {
			why := store.DependencyError(e.id, e.state)
			if e.deleted {
				why = store.DependencyDeletedError(e.id)
			}
			if err := r.resolve([]ended{e}, false, why); err != nil {
				return nil, 0, false, err
			}
		}
		ends, r.next = r.next, nil
	}
	return r.notes, r.budget, r.parked, nil
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
	// budget is how many edges the resolution may still resolve, or unbounded; parked says
	// it parked an end.
	budget int
	parked bool
}

// resolve settles the dependents of the ended jobs: completed, or failed with
// why for the dependents it cancels. A fan-out's release, whose dependents wait for the one job
// alone, is one statement (releaseWaitersSQL); a batch of completions that leaves its dependents
// waiting, the common case of a fan-in, costs three: the edges' delete, the read of the
// counts, and the count.
//
// Under a budget it takes at most what is left of it and parks the ends whose dependents it
// leaves.
func (r *resolver) resolve(ends []ended, completed bool, why string) error {
	if r.budget == 0 {
		return r.park(ends)
	}
	endIDs := make([]int64, len(ends))
	for i, e := range ends {
		endIDs[i] = e.id
	}
	ids := jsonText(endIDs)
	waited := make(map[int64]int64) // dependent id → how many of the ended jobs it waited for
	var dependents []int64
	taken := 0 // what the last query found
	found := func(rows *sql.Rows) error {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		taken++
		if waited[id] == 0 {
			dependents = append(dependents, id)
		}
		waited[id]++
		return nil
	}
	// The jobs that wait for one of them alone first: released at once when it completed, else
	// judged with the others below.
	if completed {
		n, err := r.releaseRows(releaseWaitersSQL, ids, r.at, r.limit())
		if err != nil {
			return err
		}
		r.spend(n)
	} else {
		if err := scanRows(r.x, waitersSQL, []any{ids, r.limit()}, found); err != nil {
			return err
		}
		r.spend(taken)
	}
	if r.budget != 0 {
		query, args := unlinkSQL, []any{ids}
		if r.budget != unbounded {
			query, args = unlinkSomeSQL, []any{ids, r.budget}
		}
		taken = 0
		if err := scanRows(r.x, query, args, found); err != nil {
			return err
		}
		r.spend(taken)
	}
	if err := r.judge(dependents, waited, completed, why); err != nil {
		return err
	}
	// What the budget left is parked once what it took has left pending: a failed end's waiters
	// were only read above.
	if r.budget == 0 {
		return r.park(ends)
	}
	return nil
}

// judge settles the dependents the ends took, each with how many of them it waited for:
// counted off, released, or cancelled with why when the ends failed.
func (r *resolver) judge(dependents []int64, waited map[int64]int64, completed bool, why string) error {
	if len(dependents) == 0 {
		return nil
	}
	// A dependent with a count these ends bring to zero loses it and is released, as one without
	// a count is; the others are counted off. A failure counts off only those that ignore it: the
	// rest are cancelled below (and releaseSQL releases none of them).
	var gone []int64               // dependents whose count these ends take to zero
	held := make(map[int64]bool)   // those they leave counted, or cancel: not released
	left := make(map[string]int64) // those left above zero: id → how many to take off
	err := scanRows(r.x, waitsSQL, []any{jsonText(dependents)}, func(rows *sql.Rows) error {
		var id, pending int64
		var ignore bool
		if err := rows.Scan(&id, &pending, &ignore); err != nil {
			return err
		}
		switch n := waited[id]; {
		case !completed && !ignore: // cancelled below
			held[id] = true
		case pending > n:
			held[id] = true
			left[strconv.FormatInt(id, 10)] = n
		default:
			gone = append(gone, id)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var release, cancelled []int64
	for _, id := range dependents {
		if !held[id] {
			release = append(release, id)
		}
	}
	if len(gone) > 0 {
		if _, err := r.x.exec(forgetWaitsSQL, jsonText(gone)); err != nil {
			return err
		}
	}
	if len(left) > 0 {
		if _, err := r.x.exec(countOffSQL, jsonText(left)); err != nil {
			return err
		}
	}
	if len(release) > 0 {
		if _, err := r.releaseRows(releaseSQL, jsonText(release), r.at, completed); err != nil {
			return err
		}
	}
	if !completed {
		err := scanRows(r.x, cancelDependentsSQL, []any{jsonText(dependents), r.at, r.stamp, why}, func(rows *sql.Rows) error {
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
	_, err = r.x.exec(forgetWaitsSQL, jsonText(cancelled))
	return err
}

// releaseRows runs a release (releaseSQL, releaseWaitersSQL), records the moves and the queues
// given jobs, and returns how many jobs it released.
func (r *resolver) releaseRows(query string, args ...any) (int, error) {
	n := 0
	err := scanRows(r.x, query, args, func(rows *sql.Rows) error {
		var id int64
		var q, state string
		if err := rows.Scan(&id, &q, &state); err != nil {
			return err
		}
		n++
		r.c.move(q, store.StatePending, store.State(state), 1)
		if state == string(store.StateAvailable) {
			r.notes = append(r.notes, store.Notification{Topic: store.TopicInsert, Queue: q})
		}
		return nil
	})
	return n, err
}

// limit is what is left of the budget as a LIMIT: -1 for none.
func (r *resolver) limit() int {
	if r.budget == unbounded {
		return -1
	}
	return r.budget
}

// spend takes n dependents off the budget, if there is one.
func (r *resolver) spend(n int) {
	if r.budget != unbounded {
		r.budget -= n
	}
}

// park parks those of ends whose edges are left.
func (r *resolver) park(ends []ended) error {
	states := make(map[string]string, len(ends))
	for _, e := range ends {
		st := string(e.state)
		if e.deleted {
			st = ""
		}
		states[strconv.FormatInt(e.id, 10)] = st
	}
	res, err := r.x.exec(parkSQL, jsonText(states))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n > 0 {
		r.parked = true
	}
	return nil
}

// scanRows runs query and calls row for every row it returns.
func scanRows(x execer, query string, args []any, row func(*sql.Rows) error) error {
	rows, err := x.query(query, args...)
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
	_, _, err := resolveWithin(t, unbounded, ends)
	return err
}

// resolveBounded is resolveIn within what is left of the transaction's settle batch (see
// resolveDeps): it reports whether it parked ends.
func resolveBounded(t *wtx, ends ...ended) (parked bool, err error) {
	left, parked, err := resolveWithin(t, t.w.settleLeft, ends)
	if err == nil {
		t.w.settleLeft = left
	}
	return parked, err
}

// resolveWithin resolves the dependents of ends within budget edges (see resolveDeps), announces
// them and flushes the counts it moved; it returns what is left of the budget.
func resolveWithin(t *wtx, budget int, ends []ended) (left int, parked bool, err error) {
	if len(ends) == 0 {
		return budget, false, nil
	}
	c := make(counts)
	notes, left, parked, err := resolveDeps(t, t.now, c, ends, budget)
	if err != nil {
		return budget, false, err
	}
	t.notify(notes...)
	return left, parked, c.flush(t)
}
