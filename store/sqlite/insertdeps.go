package sqlite

import (
	"cmp"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/ids"
)

// depPlan is how a job inserted with dependencies starts: waiting for some of them, cancelled
// for one that has failed, or as it would without them.
type depPlan struct {
	dependsOn []int64 // every dependency, in order, without repeats
	waiting   []int64 // the ones it waits for
	failed    string  // the error a failed dependency leaves it cancelled with
}

func hasDeps(p *store.InsertParams) bool {
	return len(p.DependsOn) > 0 || len(p.DependsOnIndex) > 0 || p.DependencyOf != 0
}

// checkJoined checks that the jobs that params join (DependencyOf) wait, before the call
// inserts anything: one that a job of the call ends (joining it cancelled) takes the call's
// later jobs into its list all the same.
func checkJoined(x execer, params []store.InsertParams) error {
	var joined []int64
	for _, p := range params {
		if p.DependencyOf != 0 {
			joined = append(joined, p.DependencyOf)
		}
	}
	if len(joined) == 0 {
		return nil
	}
	states, err := jobStates(x, joined)
	if err != nil {
		return err
	}
	for _, id := range joined {
		switch st, ok := states[id]; {
		case !ok:
			return fmt.Errorf("dependent job %d: %w", id, store.ErrNotFound)
		case st != store.StatePending:
			return fmt.Errorf("dependent job %d is %s: %w", id, st, store.ErrNotPending)
		}
	}
	return nil
}

// planBatch plans the jobs of params[idx...] that have dependencies, all of them inserted before
// these, with one read of their states; nil when none has any.
func planBatch(x execer, params []store.InsertParams, idx []int, res []store.InsertResult) (map[int]*depPlan, error) {
	deps := make(map[int][]int64)
	var all []int64
	for _, i := range idx {
		if !hasDeps(&params[i]) {
			continue
		}
		named, err := depIDs(params, i, res)
		if err != nil {
			return nil, err
		}
		deps[i] = named
		all = append(all, named...)
	}
	if len(deps) == 0 {
		return nil, nil
	}
	states, err := jobStates(x, ids.Unique(all))
	if err != nil {
		return nil, err
	}
	plans := make(map[int]*depPlan, len(deps))
	for _, i := range idx {
		if named, ok := deps[i]; ok {
			if plans[i], err = planFrom(&params[i], named, states); err != nil {
				return nil, err
			}
		}
	}
	return plans, nil
}

// depIDs are the ids of params[i]'s dependencies, in order, without repeats.
func depIDs(params []store.InsertParams, i int, res []store.InsertResult) ([]int64, error) {
	p := &params[i]
	out := slices.Clone(p.DependsOn)
	for _, k := range p.DependsOnIndex {
		if k < 0 || k >= i {
			return nil, fmt.Errorf("job %d of the call waits for job %d of it, not an earlier one", i, k)
		}
		out = append(out, res[k].Job.ID)
	}
	return ids.Unique(out), nil
}

// planFrom is the plan of p, whose dependencies deps are in states when they exist.
func planFrom(p *store.InsertParams, deps []int64, states map[int64]store.State) (*depPlan, error) {
	plan := &depPlan{dependsOn: deps}
	for _, d := range deps {
		st, ok := states[d]
		switch {
		case !ok:
			return nil, fmt.Errorf("dependency job %d: %w", d, store.ErrNotFound)
		case st.Final() && st != store.StateCompleted && !p.IgnoreFailedDeps:
			if plan.failed == "" {
				plan.failed = store.DependencyError(d, st)
			}
		case store.WaitsFor(st, p.IgnoreFailedDeps):
			plan.waiting = append(plan.waiting, d)
		}
	}
	return plan, nil
}

// jobStates reads the states of the jobs ids names that exist.
func jobStates(x execer, ids []int64) (map[int64]store.State, error) {
	out := make(map[int64]store.State, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := x.query(`SELECT id, state FROM jobs WHERE id IN (SELECT value FROM json_each(?))`, jsonText(ids))
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		var st string
		if err := rows.Scan(&id, &st); err != nil {
			rows.Close()
			return nil, err
		}
		out[id] = store.State(st)
	}
	return out, errors.Join(rows.Err(), rows.Close())
}

// apply sets the new row j as the plan starts it; a nil plan leaves it alone.
func (plan *depPlan) apply(j *store.JobRow, now time.Time) {
	if plan == nil {
		return
	}
	j.DependsOn = plan.dependsOn
	switch {
	case plan.failed != "":
		j.State, j.FinalizedAt = store.StateCancelled, now
		j.Errors = []store.AttemptError{{At: now, Error: plan.failed}}
	case len(plan.waiting) > 0:
		j.State = store.StatePending
	}
}

// pending is how many dependencies the row waits for.
func (plan *depPlan) pending() int {
	if plan == nil || plan.failed != "" {
		return 0
	}
	return len(plan.waiting)
}

// waitsOn is the job's waits_on column: the one job it waits for when it waits for one alone
// (schema 0013), which it then has no edge from; nil otherwise.
func (plan *depPlan) waitsOn() any {
	if plan.pending() != 1 {
		return nil
	}
	return plan.waiting[0]
}

// linkWaits writes, for the inserted jobs res[idx...] that wait for some of their
// dependencies, the has-dependents flags of those, and for the jobs that wait for more than one
// (one that waits for one names it in waits_on: see insertRows) the edges from them and the
// counts of what they wait for.
// Rows that share a value go in one statement over a JSON array of the others:
// the edges grouped by dependency or by dependent, whichever makes fewer groups (a fan-in's last
// step waits for all of a fan-out's steps), the counts by count.
func linkWaits(x execer, idx []int, plans map[int]*depPlan, res []store.InsertResult) error {
	byDep, byJob := make(map[int64][]int64), make(map[int64][]int64)
	var deps, jobs []int64 // the keys of byDep and byJob, in order
	type count struct {
		n      int
		ignore bool
	}
	waits := make(map[count][]int64)
	var counts []count
	var flagged []int64 // the dependencies waited for, each once
	seen := make(map[int64]bool)
	for _, i := range idx {
		plan := plans[i]
		n := plan.pending()
		if n == 0 || res[i].Duplicate {
			continue
		}
		for _, d := range plan.waiting {
			if !seen[d] {
				seen[d] = true
				flagged = append(flagged, d)
			}
		}
		if n == 1 {
			continue
		}
		j := res[i].Job
		for _, d := range plan.waiting {
			if byDep[d] == nil {
				deps = append(deps, d)
			}
			byDep[d] = append(byDep[d], j.ID)
		}
		jobs = append(jobs, j.ID)
		byJob[j.ID] = plan.waiting
		k := count{n, j.IgnoreFailedDeps}
		if waits[k] == nil {
			counts = append(counts, k)
		}
		waits[k] = append(waits[k], j.ID)
	}
	if len(flagged) == 0 {
		return nil
	}
	if _, err := x.exec(`UPDATE jobs SET has_dependents = 1
		WHERE id IN (SELECT value FROM json_each(?)) AND NOT has_dependents`, jsonText(flagged)); err != nil {
		return err
	}
	if len(deps) <= len(jobs) {
		for _, d := range deps {
			if _, err := x.exec(`INSERT OR IGNORE INTO job_deps (dep_id, job_id) SELECT ?, value FROM json_each(?)`,
				d, jsonText(byDep[d])); err != nil {
				return err
			}
		}
	} else {
		for _, j := range jobs {
			if _, err := x.exec(`INSERT OR IGNORE INTO job_deps (dep_id, job_id) SELECT value, ? FROM json_each(?)`,
				j, jsonText(byJob[j])); err != nil {
				return err
			}
		}
	}
	for _, k := range counts {
		if _, err := x.exec(`INSERT INTO job_waits (job_id, pending, ignore_failed) SELECT value, ?, ? FROM json_each(?)`,
			k.n, k.ignore, jsonText(waits[k])); err != nil {
			return err
		}
	}
	return nil
}

// numberStep names the step of new job j, which has just joined p.DependencyOf, by its place
// there: the length of the list it was appended to.
func numberStep(x execer, p *store.InsertParams, j *store.JobRow) error {
	rows, err := x.query(`UPDATE jobs SET step = ?1 || (SELECT json_array_length(depends_on) FROM jobs WHERE id = ?3)
		WHERE id = ?2 RETURNING step`, p.Step, j.ID, p.DependencyOf)
	if err != nil {
		return fmt.Errorf("number step of job %d: %w", j.ID, err)
	}
	defer rows.Close()
	if !rows.Next() {
		return fmt.Errorf("number step of job %d: %w", j.ID, cmp.Or(rows.Err(), store.ErrNotFound))
	}
	if err := rows.Scan(&j.Step); err != nil {
		return fmt.Errorf("number step of job %d: %w", j.ID, err)
	}
	return rows.Close()
}

// linkDeps writes the edges of the inserted job j: from each dependency it waits for, and to the
// job it was added to (DependencyOf). It returns j as ended when it starts final and another job
// now waits for it, for the caller to resolve.
func linkDeps(x execer, p *store.InsertParams, plan *depPlan, j *store.JobRow) ([]ended, error) {
	if err := linkWaits(x, []int{0}, map[int]*depPlan{0: plan}, []store.InsertResult{{Job: j}}); err != nil {
		return nil, err
	}
	if p.DependencyOf == 0 {
		return nil, nil
	}
	if err := addWait(x, p.DependencyOf, j.ID); err != nil {
		return nil, err
	}
	if _, err := x.exec(`UPDATE jobs SET depends_on = json_insert(coalesce(depends_on, '[]'), '$[#]', ?1)
		WHERE id = ?2`, j.ID, p.DependencyOf); err != nil {
		return nil, err
	}
	if p.NumberStep {
		// Its place is the length of the list it has just been appended to: the store's one
		// writer keeps another call from adding to the same job in between.
		if err := numberStep(x, p, j); err != nil {
			return nil, err
		}
	}
	if j.State.Final() {
		return []ended{{id: j.ID, state: j.State}}, nil
	}
	return nil, nil
}

// addWait makes pending job of wait for one more job, dep, which it names already or is added
// to (a join): an edge from dep and one more in its count.
func addWait(x execer, of, dep int64) error {
	// A job that waited for one alone waits for two now: that one's waits_on becomes an edge.
	if _, err := x.exec(`INSERT OR IGNORE INTO job_deps (dep_id, job_id)
			SELECT waits_on, id FROM jobs WHERE id = ?1 AND state = 'pending' AND waits_on IS NOT NULL`, of); err != nil {
		return err
	}
	if _, err := x.exec(`UPDATE jobs SET waits_on = NULL WHERE id = ? AND waits_on IS NOT NULL`, of); err != nil {
		return err
	}
	if _, err := x.exec(`INSERT INTO job_deps (dep_id, job_id) VALUES (?, ?)`, dep, of); err != nil {
		return err
	}
	if _, err := x.exec(`UPDATE jobs SET has_dependents = 1 WHERE id = ?`, dep); err != nil {
		return err
	}
	// A second wait for a job that waited for one gives it a count.
	_, err := x.exec(`INSERT INTO job_waits (job_id, pending, ignore_failed)
			SELECT id, 2, ignore_failed_deps FROM jobs WHERE id = ?1 AND state = 'pending'
		ON CONFLICT (job_id) DO UPDATE SET pending = pending + 1`, of)
	return err
}

// stillCounts reports whether pending job of still counts dep among what it waits for: an edge from
// it, or dep named alone (waits_on). An end of dep that is parked and not settled keeps it so.
func stillCounts(x execer, of, dep int64) (bool, error) {
	var n int
	err := scanRows(x, `SELECT EXISTS (SELECT 1 FROM job_deps WHERE dep_id = ?1 AND job_id = ?2)
		OR EXISTS (SELECT 1 FROM jobs WHERE id = ?2 AND waits_on = ?1)`, []any{dep, of}, func(rows *sql.Rows) error {
		return rows.Scan(&n)
	})
	return n == 1, err
}
