package sqlite

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rotahq/rota/store"
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

// planDeps reads the states of params[i]'s dependencies, the jobs of earlier params among them,
// and checks that the job it is to be a dependency of still waits.
func planDeps(x execer, params []store.InsertParams, i int, res []store.InsertResult) (*depPlan, error) {
	p := &params[i]
	deps := slices.Clone(p.DependsOn)
	for _, k := range p.DependsOnIndex {
		if k < 0 || k >= i {
			return nil, fmt.Errorf("job %d of the call waits for job %d of it, not an earlier one", i, k)
		}
		deps = append(deps, res[k].Job.ID)
	}
	plan := &depPlan{}
	for _, d := range deps {
		if !slices.Contains(plan.dependsOn, d) {
			plan.dependsOn = append(plan.dependsOn, d)
		}
	}
	states, err := jobStates(x, plan.dependsOn)
	if err != nil {
		return nil, err
	}
	for _, d := range plan.dependsOn {
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
	if p.DependencyOf != 0 {
		states, err := jobStates(x, []int64{p.DependencyOf})
		if err != nil {
			return nil, err
		}
		switch st, ok := states[p.DependencyOf]; {
		case !ok:
			return nil, fmt.Errorf("dependent job %d: %w", p.DependencyOf, store.ErrNotFound)
		case st != store.StatePending:
			return nil, fmt.Errorf("dependent job %d is %s: %w", p.DependencyOf, st, store.ErrNotPending)
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

// linkDeps writes the edges of the inserted job j: from each dependency it waits for, and to the
// job it was added to (DependencyOf). It returns j as ended when it starts final and another job
// now waits for it, for the caller to resolve.
func linkDeps(x execer, p *store.InsertParams, plan *depPlan, j *store.JobRow) ([]ended, error) {
	if n := plan.pending(); n > 0 {
		if _, err := x.exec(`INSERT OR IGNORE INTO job_deps (dep_id, job_id) SELECT value, ? FROM json_each(?)`,
			j.ID, jsonText(plan.waiting)); err != nil {
			return nil, err
		}
		if _, err := x.exec(`UPDATE jobs SET has_dependents = 1
			WHERE id IN (SELECT value FROM json_each(?)) AND NOT has_dependents`, jsonText(plan.waiting)); err != nil {
			return nil, err
		}
		if _, err := x.exec(`INSERT INTO job_waits (job_id, pending, ignore_failed) VALUES (?, ?, ?)`,
			j.ID, n, j.IgnoreFailedDeps); err != nil {
			return nil, err
		}
	}
	if p.DependencyOf == 0 {
		return nil, nil
	}
	if _, err := x.exec(`INSERT INTO job_deps (dep_id, job_id) VALUES (?, ?)`, j.ID, p.DependencyOf); err != nil {
		return nil, err
	}
	if _, err := x.exec(`UPDATE jobs SET has_dependents = 1 WHERE id = ?`, j.ID); err != nil {
		return nil, err
	}
	if _, err := x.exec(`UPDATE job_waits SET pending = pending + 1 WHERE job_id = ?`, p.DependencyOf); err != nil {
		return nil, err
	}
	if _, err := x.exec(`UPDATE jobs SET depends_on = json_insert(coalesce(depends_on, '[]'), '$[#]', ?1)
		WHERE id = ?2`, j.ID, p.DependencyOf); err != nil {
		return nil, err
	}
	if j.State.Final() {
		return []ended{{id: j.ID, state: j.State}}, nil
	}
	return nil, nil
}
