package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/ids"
)

// Dependencies. An insert that names dependencies locks them (FOR NO KEY UPDATE) before it
// reads their states, so a dependency ending at the same moment either ended before (the new
// job counts it as ended) or waits for the insert to commit, and then finds the new job's edge
// and resolves it. Everything that ends a job afterwards resolves its dependents through the
// trigger of migration 007, in the transaction that ends it.
//
// The jobs of a call that uses none of this take the plain statements of insert.go; a call with
// one such job goes through here whole, in one transaction, because its jobs may depend on each
// other (DependsOnIndex).

// usesDeps reports whether p needs the dependency path: it waits for jobs, joins a pending job's
// dependencies, or carries workflow columns, which the plain statements do not write.
func usesDeps(p store.InsertParams) bool {
	return len(p.DependsOn) > 0 || len(p.DependsOnIndex) > 0 || p.DependencyOf != 0 ||
		p.Workflow != "" || p.Step != "" || p.IgnoreFailedDeps
}

// depLockSQL locks the jobs $2 in id order and reads what their dependents need to know, and
// reserves $3 ids, so that the rows of the call are known before they are inserted.
const depLockSQL = `
WITH locked AS (
	SELECT id, state, coalesce(ignore_failed_deps, false) AS ignore_failed_deps FROM {schema}.jobs
	WHERE id = ANY ($2::bigint[])
	ORDER BY id
	FOR NO KEY UPDATE
)
SELECT {now}, ARRAY(SELECT nextval({jobs_id_seq}) FROM generate_series(1, $3::integer)),
	ARRAY(SELECT id FROM locked ORDER BY id), ARRAY(SELECT state FROM locked ORDER BY id),
	ARRAY(SELECT ignore_failed_deps FROM locked ORDER BY id)`

// insertDepsSQL inserts jobs with their ids, states and counts decided by the caller, in one
// statement with what they change elsewhere: their edges (job_deps), the has_dependents flag of
// the jobs they wait for, and the jobs they join as a dependency (DependencyOf), which one
// already cancelled at its insert cancels in turn. Only the rows inserted count: with unique
// keys, a row that conflicted changes nothing and goes to the next round.
//
// A job waited for is updated even when its flag is set already: a completion that began
// before this insert committed, in a transaction above READ COMMITTED, then fails to serialize
// instead of missing the new edge in its snapshot.
var insertDepsSQL = `
WITH params AS MATERIALIZED (
	SELECT * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::json[], $6::integer[], $7::text[],
		$8::integer[], $9::timestamptz[], $10::timestamptz[], $11::json[], $12::json[], $13::text[],
		$14::json[], $15::text[], $16::text[], $17::text[], $18::json[], $19::boolean[],
		$20::integer[], $21::boolean[], $22::text[])
		WITH ORDINALITY AS p(id, kind, queue, args, priority, state, max_attempts, run_at, expires_at,
			tags, metadata, unique_key, unique_states, schedule, workflow, step, depends_on,
			ignore_failed_deps, pending_deps, has_dependents, why, ord)
),
inserted AS (
	INSERT INTO {schema}.jobs (id, kind, queue, args, priority, state, max_attempts, run_at,
		expires_at, tags, metadata, unique_key, unique_states, schedule, created_at, workflow, step,
		depends_on, ignore_failed_deps, pending_deps, has_dependents, errors, finalized_at)
	SELECT id, kind, queue, args, priority, state, max_attempts, coalesce(run_at, {now}), expires_at,
		CASE WHEN tags IS NULL THEN '{}' ELSE ARRAY(SELECT json_array_elements_text(tags)) END,
		metadata, unique_key,
		CASE WHEN unique_key IS NOT NULL THEN ARRAY(SELECT json_array_elements_text(unique_states)) END,
		schedule, {now}, workflow, step,
		CASE WHEN depends_on IS NOT NULL THEN ARRAY(SELECT json_array_elements_text(depends_on)::bigint) END,
		ignore_failed_deps, pending_deps, has_dependents,
		CASE WHEN why IS NULL THEN '[]' ELSE jsonb_build_array(
			jsonb_build_object('attempt', 0, 'at', {now}, 'error', why)) END,
		CASE WHEN why IS NOT NULL THEN {now} END
	FROM params
	ORDER BY ord
	{on_conflict}
	RETURNING id, queue, state
),
steps AS (
	INSERT INTO {schema}.workflow_steps (workflow, job_id)
	SELECT p.workflow, p.id FROM params p WHERE p.workflow IS NOT NULL AND p.id IN (SELECT id FROM inserted)
),
edges AS (
	INSERT INTO {schema}.job_deps (dep_id, job_id)
	SELECT e.dep, e.job FROM unnest($23::bigint[], $24::bigint[]) AS e(dep, job)
	-- The row an edge comes with is its dependent, or its dependency for DependencyOf.
	WHERE e.job IN (SELECT id FROM inserted) OR e.dep IN (SELECT id FROM inserted)
	ON CONFLICT DO NOTHING
),
links AS (
	SELECT l.target, bool_or(l.gains) AS gains,
		array_agg(l.job ORDER BY l.ord) FILTER (WHERE NOT l.gains) AS added,
		count(*) FILTER (WHERE l.waits) AS waits,
		(array_agg(l.why ORDER BY l.ord) FILTER (WHERE l.why IS NOT NULL))[1] AS why
	FROM unnest($25::bigint[], $26::bigint[], $27::boolean[], $28::boolean[], $29::text[])
		WITH ORDINALITY AS l(target, job, gains, waits, why, ord)
	WHERE l.job IN (SELECT id FROM inserted)
	GROUP BY l.target
),
linked AS (
	UPDATE {schema}.jobs SET
		has_dependents = coalesce(jobs.has_dependents, false) OR l.gains,
		depends_on = CASE WHEN l.added IS NULL THEN jobs.depends_on
			ELSE coalesce(jobs.depends_on, '{}') || l.added END,
		pending_deps = jobs.pending_deps + l.waits,
		state = CASE WHEN l.why IS NULL THEN jobs.state ELSE 'cancelled' END,
		finalized_at = CASE WHEN l.why IS NULL THEN jobs.finalized_at ELSE {now} END,
		errors = CASE WHEN l.why IS NULL THEN jobs.errors ELSE jobs.errors || jsonb_build_array(
			jsonb_build_object('attempt', jobs.attempt, 'at', {now}, 'error', l.why)) END,
		unique_states = CASE WHEN l.why IS NULL THEN jobs.unique_states ELSE ` + keepKeyIf("'cancelled'") + ` END
	FROM links l
	WHERE jobs.id = l.target
	-- The state only of the jobs this statement ended: a joined job an earlier statement of
	-- the call ended is not announced again.
	RETURNING jobs.id, CASE WHEN l.why IS NOT NULL THEN jobs.state END AS state, jobs.queue
)
SELECT ARRAY(SELECT id FROM inserted),
	(SELECT count(pg_notify({insert_channel}, {origin} || queue)) FROM (
		SELECT DISTINCT queue FROM inserted WHERE state = 'available' AND queue = ANY ($30::text[])) q),
	` + finalNotify("inserted") + `, ` + finalNotify("linked")

// depJob is what a dependent needs to know of a job it names.
type depJob struct {
	state  store.State
	ignore bool // the job's own IgnoreFailedDeps, for the jobs that join it (DependencyOf)
}

// depInsert is one call's insert through the dependency path.
type depInsert struct {
	s      *Store
	q      querier
	params []store.InsertParams
	out    []store.InsertResult
	ids    []int64 // reserved for params, in their order
	now    time.Time
	// known holds the jobs read under lock and those this call inserted.
	known map[int64]depJob
	// reread is set once the call ended jobs (a supersede, a joined job cancelled) and with
	// them perhaps jobs it knows: from then on every job named is read again, under lock.
	reread bool
	// dependents[i] says whether a job will wait for params[i]: a later one of the call, or the
	// pending job it joins.
	dependents []bool
	// flagged holds the jobs this call inserted with has_dependents set.
	flagged  map[int64]bool
	inserted map[int64]int // job id -> index in out, for resolveConflicts
}

// depRow is what the insert of one job decides.
type depRow struct {
	state     store.State
	dependsOn []int64
	waits     []int64 // the jobs it waits for, once each
	why       string  // the error of a job cancelled at its insert
}

// insertDeps inserts params through q, a transaction, in generations: the jobs that depend on
// none of the call first, then those that depend only on those, and so on, each generation one
// statement (with rounds for unique keys, as insert has). Dependencies outside the call are
// locked and checked before anything is inserted.
func (s *Store) insertDeps(ctx context.Context, q querier, params []store.InsertParams) ([]store.InsertResult, error) {
	gens, err := generations(params)
	if err != nil {
		return nil, err
	}
	d := &depInsert{
		s: s, q: q, params: params,
		out:        make([]store.InsertResult, len(params)),
		known:      make(map[int64]depJob),
		dependents: make([]bool, len(params)),
		flagged:    make(map[int64]bool),
		inserted:   make(map[int64]int),
	}
	var named []int64
	for i, p := range params {
		named = append(named, p.DependsOn...)
		if p.DependencyOf != 0 {
			named = append(named, p.DependencyOf)
			d.dependents[i] = true
		}
		for _, j := range p.DependsOnIndex {
			d.dependents[j] = true
		}
	}
	if d.ids, err = d.lock(ctx, len(params), named); err != nil {
		return nil, err
	}
	for _, p := range params {
		for _, id := range p.DependsOn {
			if _, ok := d.known[id]; !ok {
				return nil, fmt.Errorf("dependency %d: %w", id, store.ErrNotFound)
			}
		}
		if err := d.checkJoined(p.DependencyOf); err != nil {
			return nil, err
		}
	}
	for _, gen := range gens {
		if err := d.insertGeneration(ctx, gen); err != nil {
			return nil, err
		}
	}
	if err := d.numberSteps(ctx); err != nil {
		return nil, err
	}
	if d.reread {
		if err := s.rereadResults(ctx, q, d.out); err != nil {
			return nil, err
		}
	}
	return d.out, nil
}

// numberStepsSQL puts the new jobs of the call that joined each job ($1, in the call's order,
// joining $2) in the call's order at the end of its depends_on, where the insert appended them
// in the order its generations and rounds went in, under the lock that keeps another call adding
// to the same job waiting; then appends to the step prefix ($3) of each numbered one (a prefix
// that is not NULL) its place among the jobs of the job it joined.
const numberStepsSQL = `
WITH mine AS (
	SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[]) WITH ORDINALITY AS m(id, of, prefix, ord)
),
ordered AS (
	UPDATE {schema}.jobs c SET depends_on =
		ARRAY(SELECT d.id FROM unnest(c.depends_on) WITH ORDINALITY AS d(id, n)
			WHERE d.id NOT IN (SELECT id FROM mine WHERE mine.of = c.id) ORDER BY d.n) ||
		ARRAY(SELECT m.id FROM mine m WHERE m.of = c.id AND m.id = ANY (c.depends_on) ORDER BY m.ord)
	WHERE c.id IN (SELECT of FROM mine)
	RETURNING c.id, c.depends_on
),
places AS (
	SELECT c.id AS of, d.id, d.place
	FROM ordered c, unnest(c.depends_on) WITH ORDINALITY AS d(id, place)
)
UPDATE {schema}.jobs j SET step = m.prefix || p.place
FROM mine m JOIN places p ON p.of = m.of AND p.id = m.id
WHERE j.id = m.id AND m.prefix IS NOT NULL
RETURNING j.id, j.step`

// numberSteps names the steps of the new jobs of the call that ask for it (NumberStep) by their
// places, in the call's order, in the jobs they joined.
func (d *depInsert) numberSteps(ctx context.Context) error {
	var (
		joined, targets []int64
		prefixes        []*string // nil for a job whose step is not numbered
		numbered        bool
	)
	for i, p := range d.params {
		r := d.out[i]
		if p.DependencyOf == 0 || r.Duplicate || r.Job == nil {
			continue
		}
		var prefix *string
		if p.NumberStep {
			prefix, numbered = &p.Step, true
		}
		joined, targets, prefixes = append(joined, r.Job.ID), append(targets, p.DependencyOf), append(prefixes, prefix)
	}
	if !numbered {
		return nil
	}
	rs, err := d.q.query(ctx, d.s.sql(numberStepsSQL), joined, targets, prefixes)
	if err != nil {
		return fmt.Errorf("number steps: %w", err)
	}
	defer rs.Close()
	steps := make(map[int64]string)
	for rs.Next() {
		var (
			id   int64
			step string
		)
		if err := rs.Scan(&id, &step); err != nil {
			return fmt.Errorf("number steps: %w", err)
		}
		steps[id] = step
	}
	if err := rs.Err(); err != nil {
		return fmt.Errorf("number steps: %w", err)
	}
	// A duplicate of a numbered job of the call was answered with it before it was named.
	for _, r := range d.out {
		if step, ok := steps[r.Job.ID]; ok {
			r.Job.Step = step
		}
	}
	return nil
}

// generations groups the indexes of params by depth in the call: a job is one generation after
// the latest of the jobs of the call it waits for.
func generations(params []store.InsertParams) ([][]int, error) {
	depth := make([]int, len(params))
	keyDepth := make(map[string]int) // the latest generation of the call's jobs of each key so far
	var gens [][]int
	for i, p := range params {
		for _, j := range p.DependsOnIndex {
			if j < 0 || j >= i {
				return nil, fmt.Errorf("job %d of the call depends on job %d of the call, not an earlier one", i, j)
			}
			depth[i] = max(depth[i], depth[j]+1)
		}
		// A job goes in no earlier than the earlier jobs of its key: the first takes it.
		if k := p.UniqueKey; k != "" {
			depth[i] = max(depth[i], keyDepth[k])
			keyDepth[k] = depth[i]
		}
		if depth[i] == len(gens) {
			gens = append(gens, nil)
		}
		gens[depth[i]] = append(gens[depth[i]], i)
	}
	return gens, nil
}

// checkJoined checks that the job id that a job joins (DependencyOf) is pending.
func (d *depInsert) checkJoined(id int64) error {
	if id == 0 {
		return nil
	}
	j, ok := d.known[id]
	switch {
	case !ok:
		return fmt.Errorf("dependency of job %d: %w", id, store.ErrNotFound)
	case j.state != store.StatePending:
		return fmt.Errorf("dependency of job %d, which is %s: %w", id, j.state, store.ErrNotPending)
	}
	return nil
}

// lock locks the jobs ids, records them in known, and reserves n ids.
func (d *depInsert) lock(ctx context.Context, n int, ids []int64) ([]int64, error) {
	rs, err := d.q.query(ctx, d.s.sql(depLockSQL), d.s.now(), ids, n)
	if err != nil {
		return nil, err
	}
	var (
		reserved, found []int64
		states          []string
		ignores         []bool
	)
	if err := scanOne(rs, &d.now, &reserved, &found, &states, &ignores); err != nil {
		return nil, fmt.Errorf("lock dependencies: %w", err)
	}
	for k, id := range found {
		d.known[id] = depJob{state: store.State(states[k]), ignore: ignores[k]}
	}
	return reserved, nil
}

// insertGeneration inserts the jobs idx, whose dependencies in the call are all in out.
func (d *depInsert) insertGeneration(ctx context.Context, idx []int) error {
	todo := idx
	maxRounds := 2*len(todo) + 8
	for round := 0; len(todo) > 0; round++ {
		if round == maxRounds {
			return fmt.Errorf("unique keys still contended after %d rounds", round)
		}
		if err := d.readNamed(ctx, todo); err != nil {
			return err
		}
		rest, conflicted, err := d.splitHeld(ctx, todo)
		if err != nil {
			return err
		}
		todo = rest
		for chunk := range slices.Chunk(todo, maxRowsPerStatement) {
			c, err := d.insertRows(ctx, chunk)
			if err != nil {
				return err
			}
			conflicted = append(conflicted, c...)
		}
		retry, err := d.s.resolveConflicts(ctx, d.q, d.params, conflicted, d.out, d.inserted)
		if err != nil {
			return err
		}
		if len(retry) > 0 {
			// Someone's key moved: a supersede ended a job, or its holder ended.
			d.reread = true
		}
		// In the call's order: splitHeld and the insert take a key's earlier job first.
		slices.Sort(retry)
		todo = retry
	}
	return nil
}

// splitHeld takes out of idx the jobs that would be inserted ended (a dependency failed) with a
// unique key another job holds, as conflicted: an ended job is outside the unique index, so its
// insert would not conflict, and the key's holder, or its supersede, must answer it as it
// answers any insert of the key. The holder may be in the table or an earlier job of idx that
// goes in live in this round; conflicted, the ended job is answered once that one is in.
func (d *depInsert) splitHeld(ctx context.Context, idx []int) (rest, held []int, err error) {
	var keys []string
	for _, i := range idx {
		if k := d.params[i].UniqueKey; k != "" && d.row(i).state.Final() {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return idx, nil, nil
	}
	holders, err := d.s.lookupHolders(ctx, d.q, keys)
	if err != nil {
		return nil, nil, err
	}
	live := map[string]bool{}
	for _, i := range idx {
		k, final := d.params[i].UniqueKey, d.row(i).state.Final()
		switch {
		case k == "":
			rest = append(rest, i)
		case !final:
			live[k] = true
			rest = append(rest, i)
		case holders[k] != nil || live[k]:
			held = append(held, i)
		default:
			rest = append(rest, i)
		}
	}
	return rest, held, nil
}

// named returns the jobs params[i] waits for, in its order: DependsOn, then DependsOnIndex
// (the job each of those inserted, or found holding its unique key), without repeats.
func (d *depInsert) named(i int) []int64 {
	p := d.params[i]
	named := slices.Clone(p.DependsOn)
	for _, j := range p.DependsOnIndex {
		named = append(named, d.out[j].Job.ID)
	}
	return ids.Unique(named)
}

// readNamed locks and reads the jobs that the jobs idx name and known does not hold (the
// holders of unique keys found in this call), or all of them once they may have changed.
func (d *depInsert) readNamed(ctx context.Context, idx []int) error {
	var need []int64
	for _, i := range idx {
		for _, id := range d.named(i) {
			if _, ok := d.known[id]; d.reread || !ok {
				need = append(need, id)
			}
		}
		if id := d.params[i].DependencyOf; id != 0 && d.reread {
			need = append(need, id)
		}
	}
	if len(need) == 0 {
		return nil
	}
	for _, id := range need {
		delete(d.known, id)
	}
	if _, err := d.lock(ctx, 0, need); err != nil {
		return err
	}
	for _, id := range need {
		if _, ok := d.known[id]; !ok {
			return fmt.Errorf("dependency %d: %w", id, store.ErrNotFound)
		}
	}
	// A joined job was pending when the call began (insertDeps checked it); one that a job of
	// the call has ended since takes the later jobs into its list all the same.
	return nil
}

// row decides how params[i] is inserted, from the states of the jobs it names.
func (d *depInsert) row(i int) depRow {
	p := d.params[i]
	r := depRow{dependsOn: d.named(i)}
	for _, id := range r.dependsOn {
		switch dep := d.known[id]; {
		case !dep.state.Final():
			r.waits = append(r.waits, id)
		case store.WaitsFor(dep.state, p.IgnoreFailedDeps) && r.why == "":
			// It would wait for a completion that will not come.
			r.why = store.DependencyError(id, dep.state)
		}
	}
	switch {
	case r.why != "":
		r.state, r.waits = store.StateCancelled, nil
	case len(r.waits) > 0:
		r.state = store.StatePending
	case ts(p.RunAt) != nil && ts(p.RunAt).After(d.now):
		r.state = store.StateScheduled
	default:
		r.state = store.StateAvailable
	}
	return r
}

// insertRows inserts the jobs idx in one statement and returns those that conflicted.
func (d *depInsert) insertRows(ctx context.Context, idx []int) (conflicted []int, err error) {
	n := len(idx)
	var (
		ids                  = make([]int64, n)
		kinds, queues        = make([]string, n), make([]string, n)
		args, metadata       = make([][]byte, n), make([][]byte, n)
		tags, uniqueStates   = make([][]byte, n), make([][]byte, n)
		priorities, attempts = make([]int32, n), make([]int32, n)
		states               = make([]string, n)
		runAts, expiresAts   = make([]*time.Time, n), make([]*time.Time, n)
		uniqueKeys           = make([]*string, n)
		schedules, whys      = make([]*string, n), make([]*string, n)
		workflows, steps     = make([]*string, n), make([]*string, n)
		dependsOn            = make([][]byte, n)
		ignores, hasDeps     = make([]bool, n), make([]bool, n)
		pendings             = make([]int32, n)
		edgeDeps, edgeJobs   []int64
		linkTargets, linkIDs []int64
		linkGains, linkWaits []bool
		linkWhys             []*string
		due                  []string
		unique               bool
		rows                 = make([]depRow, n)
	)
	for k, i := range idx {
		p, id := d.params[i], d.ids[i]
		r := d.row(i)
		rows[k] = r
		ids[k], kinds[k], queues[k] = id, p.Kind, p.Queue
		args[k], metadata[k] = jsonParam(p.Args), jsonParam(p.Metadata)
		priorities[k], attempts[k] = int32(p.Priority), int32(p.MaxAttempts)
		states[k], pendings[k] = string(r.state), int32(len(r.waits))
		runAts[k], expiresAts[k] = ts(p.RunAt), ts(p.ExpiresAt)
		schedules[k], whys[k] = textParam(p.Schedule), textParam(r.why)
		workflows[k], steps[k] = textParam(p.Workflow), textParam(p.Step)
		// A job that ends at its insert has nothing to resolve: what names it sees it ended.
		ignores[k], hasDeps[k] = p.IgnoreFailedDeps, d.dependents[i] && !r.state.Final()
		if len(p.Tags) > 0 {
			if tags[k], err = json.Marshal(p.Tags); err != nil {
				return nil, err
			}
		}
		if len(r.dependsOn) > 0 {
			if dependsOn[k], err = json.Marshal(r.dependsOn); err != nil {
				return nil, err
			}
		}
		if p.UniqueKey != "" {
			unique = true
			uniqueKeys[k] = &p.UniqueKey
			if uniqueStates[k], err = json.Marshal(stateNames(p.UniqueStates)); err != nil {
				return nil, err
			}
		}
		for _, dep := range r.waits {
			edgeDeps, edgeJobs = append(edgeDeps, dep), append(edgeJobs, id)
			if d.flagged[dep] {
				continue
			}
			linkTargets, linkIDs = append(linkTargets, dep), append(linkIDs, id)
			linkGains, linkWaits, linkWhys = append(linkGains, true), append(linkWaits, false), append(linkWhys, nil)
		}
		if x := p.DependencyOf; x != 0 {
			// A joined job an earlier job of the call ended only lists this one.
			live := d.known[x].state == store.StatePending
			waits := live && !r.state.Final()
			var why *string
			if live && r.state.Final() && store.WaitsFor(r.state, d.known[x].ignore) {
				why = textParam(store.DependencyError(id, r.state))
			}
			if waits {
				edgeDeps, edgeJobs = append(edgeDeps, id), append(edgeJobs, x)
			}
			linkTargets, linkIDs = append(linkTargets, x), append(linkIDs, id)
			linkGains, linkWaits, linkWhys = append(linkGains, false), append(linkWaits, waits), append(linkWhys, why)
		}
		if r.state == store.StateAvailable && !slices.Contains(due, p.Queue) {
			due = append(due, p.Queue)
		}
	}
	notify := d.s.notifyNow(d.q, due)
	rs, err := d.q.query(ctx, d.s.insertSQL(d.q, insertDepsSQL, unique), d.s.now(), ids, kinds, queues, args,
		priorities, states, attempts, runAts, expiresAts, tags, metadata, uniqueKeys, uniqueStates,
		schedules, workflows, steps, dependsOn, ignores, pendings, hasDeps, whys,
		edgeDeps, edgeJobs, linkTargets, linkIDs, linkGains, linkWaits, linkWhys, notify)
	if err != nil {
		return nil, err
	}
	var (
		done                        []int64
		notified, finals, cancelled int64
	)
	if err := scanOne(rs, &done, &notified, &finals, &cancelled); err != nil {
		return nil, err
	}
	if cancelled > 0 {
		// A joined job ended, and with it perhaps jobs of this call that waited for it.
		d.reread = true
	}
	went := make(map[int64]bool, len(done))
	for _, id := range done {
		went[id] = true
	}
	for k, i := range idx {
		if !went[ids[k]] {
			conflicted = append(conflicted, i)
			continue
		}
		d.out[i] = store.InsertResult{Job: d.newJob(i, ids[k], rows[k])}
		d.known[ids[k]] = depJob{state: rows[k].state, ignore: d.params[i].IgnoreFailedDeps}
		d.flagged[ids[k]] = hasDeps[k]
		if d.params[i].UniqueKey != "" {
			d.inserted[ids[k]] = i
		}
	}
	return conflicted, nil
}

// newJob is the row the insert of params[i] as r created.
func (d *depInsert) newJob(i int, id int64, r depRow) *store.JobRow {
	p := d.params[i]
	j := newJob(p, id, d.now)
	j.State, j.Workflow, j.Step, j.IgnoreFailedDeps = r.state, p.Workflow, p.Step, p.IgnoreFailedDeps
	if len(r.dependsOn) > 0 {
		j.DependsOn = r.dependsOn
	}
	if r.why != "" {
		j.FinalizedAt = d.now
		j.Errors = []store.AttemptError{{At: d.now, Error: r.why}}
	}
	return j
}
