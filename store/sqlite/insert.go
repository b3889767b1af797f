package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rotahq/rota/store"
)

// insertChunk is how many rows one INSERT statement carries, one of literalSizes: at 19
// parameters a row it stays far below SQLite's 32766-parameter limit, and past ~100 rows a bigger
// statement saves nothing. Fewer rows go in pieces of literalSizes (piece), so that the writer
// prepares a few texts, not one per size (see completeSQLs).
const insertChunk = 96

// insertSQL[n] inserts n rows with every column. bareSQL[n] leaves out the columns most jobs
// leave empty (expiry, unique key, tags, metadata, schedule): binding a parameter is a good part
// of the cost of a row. Parameters are plain "?": the driver looks numbered ones up by name, one
// search per parameter.
var insertSQL, bareSQL = insertStatements(`kind, queue, args, priority, state, max_attempts, run_at,
	expires_at, unique_key, tags, metadata, schedule, workflow, step, depends_on, ignore_failed_deps,
	finalized_at, errors, waits_on, created_at`), insertStatements(`kind, queue, args,
	priority, state, max_attempts, run_at, created_at`)

const (
	insertColumns = 20
	bareColumns   = 8
)

func insertStatements(columns string) []string {
	perRow := strings.Count(columns, ",") + 1
	row := "(" + strings.Repeat("?, ", perRow-1) + "?)"
	return bySize(insertChunk, func(n int) string {
		return "INSERT INTO jobs (" + columns + ") VALUES " + strings.Repeat(row+", ", n-1) + row
	})
}

// Insert adds jobs in one transaction. With SynchronousFull they are on disk when it returns;
// with SynchronousNormal they survive a crash of the process but not necessarily of the host.
func (s *Store) Insert(ctx context.Context, params []store.InsertParams) ([]store.InsertResult, error) {
	if len(params) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: insert: %w", err)
	}
	r := &request{ctx: ctx}
	r.fn = func(t *wtx) error {
		var notes []store.Notification
		var err error
		r.results, notes, err = insertJobs(t, t.now, params)
		t.notify(notes...)
		return err
	}
	// Only plain calls merge: DependsOnIndex counts within its call (merged, it would name
	// another call's jobs), and a dependency that cannot be had fails its call, which must not
	// fail the calls merged with it.
	if !slices.ContainsFunc(params, func(p store.InsertParams) bool {
		return p.UniqueKey != "" || len(p.DependsOnIndex) > 0 || len(p.DependsOn) > 0 || p.DependencyOf != 0
	}) {
		r.inserts = params
	}
	if err := s.submit(r); err != nil {
		return nil, fmt.Errorf("sqlite: insert: %w", err)
	}
	return r.results, nil
}

// InsertTx inserts jobs in the caller's transaction, a *sql.Tx begun on DB(), so they exist if
// and only if it commits. Subscribers are notified at once, before that commit: a node woken
// early finds the jobs when its claim gets the write lock the caller's transaction holds, which
// is after the commit; a rolled-back insert costs it one empty claim.
func (s *Store) InsertTx(ctx context.Context, tx any, params []store.InsertParams) ([]store.InsertResult, error) {
	sqlTx, ok := tx.(*sql.Tx)
	if !ok {
		return nil, fmt.Errorf("sqlite: insert tx: tx is %T, want *sql.Tx", tx)
	}
	if len(params) == 0 {
		return nil, nil
	}
	x := newTxExec(ctx, sqlTx)
	defer x.cache.close()
	res, notes, err := insertJobs(x, s.clk.Now(), params)
	if err != nil {
		return nil, fmt.Errorf("sqlite: insert tx: %w", err)
	}
	s.hub.Publish(coalesce(notes))
	return res, nil
}

// insertJobs inserts params in order. Jobs without a unique key go in multi-row statements, and
// so do those that wait for jobs inserted before them (a workflow's steps): their dependencies
// are read, and their edges written, a statement per chunk. A keyed job, and one added as a
// dependency of another (DependencyOf), is looked up and inserted on its own, so that a later job
// of the same call sees an earlier one's key.
func insertJobs(x execer, now time.Time, params []store.InsertParams) ([]store.InsertResult, []store.Notification, error) {
	now = truncate(now)
	if err := checkJoined(x, params); err != nil {
		return nil, nil, err
	}
	res := make([]store.InsertResult, len(params))
	var notes []store.Notification
	var batch []int              // indexes into params, for the next multi-row statements
	keyed := make(map[int64]int) // job id -> index into res, of the keyed jobs inserted so far
	superseded := false          // a job of the call cancelled a job holding its key
	c := make(counts)
	flush := func() error {
		for len(batch) > 0 {
			chunk := batch[:piece(min(len(batch), insertChunk))]
			plans, err := planBatch(x, params, chunk, res)
			if err != nil {
				return err
			}
			if err := insertRows(x, now, params, chunk, res, plans); err != nil {
				return err
			}
			if err := linkWaits(x, chunk, plans, res); err != nil {
				return err
			}
			batch = batch[len(chunk):]
		}
		return nil
	}
	for i := range params {
		p := &params[i]
		if p.UniqueKey == "" && p.DependencyOf == 0 {
			// A job that waits for one still in the batch must see it inserted first.
			if len(batch) > 0 && slices.ContainsFunc(p.DependsOnIndex, func(k int) bool { return k >= batch[0] }) {
				if err := flush(); err != nil {
					return nil, nil, err
				}
			}
			batch = append(batch, i)
			if len(batch) == insertChunk {
				if err := flush(); err != nil {
					return nil, nil, err
				}
			}
			continue
		}
		if err := flush(); err != nil {
			return nil, nil, err
		}
		plans, err := planBatch(x, params, []int{i}, res) // nil for a job without dependencies
		if err != nil {
			return nil, nil, err
		}
		plan := plans[i]
		var cancelled []*store.JobRow
		if p.UniqueKey == "" {
			err = insertRows(x, now, params, []int{i}, res, plans)
		} else {
			cancelled, err = insertUnique(x, now, params, i, res, plans)
		}
		if err != nil {
			return nil, nil, err
		}
		superseded = superseded || len(cancelled) > 0
		if !res[i].Duplicate {
			keyed[res[i].Job.ID] = i
		}
		var ends []ended
		for _, h := range cancelled {
			ends = append(ends, ended{id: h.ID, state: store.StateCancelled})
		}
		if plan != nil && !res[i].Duplicate {
			more, err := linkDeps(x, p, plan, res[i].Job)
			if err != nil {
				return nil, nil, err
			}
			ends = append(ends, more...)
		}
		resolved, _, _, err := resolveDeps(x, now, c, ends, unbounded)
		if err != nil {
			return nil, nil, err
		}
		notes = append(notes, resolved...)
		for _, h := range cancelled {
			if k, ok := keyed[h.ID]; ok {
				// Inserted by this call: its result says how it ended, and it is counted once,
				// as cancelled, below. A resolution of the call that moved it on since its
				// insert (released, as it ignores failed dependencies) moved its count too:
				// that move is undone, the count below being its only one.
				if made := res[k].Job.State; h.State != made {
					c.move(h.Queue, h.State, made, 1)
				}
				was := *res[k].Job
				was.State, was.FinalizedAt = store.StateCancelled, now
				res[k].Job = &was
			} else {
				c.move(h.Queue, h.State, store.StateCancelled, 1)
			}
			notes = append(notes, store.Notification{Topic: store.TopicFinal, Queue: h.Queue, JobID: h.ID})
		}
	}
	if err := flush(); err != nil {
		return nil, nil, err
	}
	var reread map[int]bool
	if superseded {
		var err error
		if reread, err = rereadResults(x, res); err != nil {
			return nil, nil, err
		}
	}
	for i, r := range res {
		if r.Duplicate {
			continue
		}
		state := r.Job.State
		if reread[i] {
			// Counted as inserted, pending: what the call's supersede settled moved it on.
			state = store.StatePending
		}
		c.add(r.Job.Queue, state, 1)
		if r.Job.State == store.StateAvailable {
			notes = append(notes, store.Notification{Topic: store.TopicInsert, Queue: r.Job.Queue})
		}
	}
	if err := c.flush(x); err != nil {
		return nil, nil, err
	}
	return res, notes, nil
}

// rereadResults reads again what a supersede in the call may have changed after its result
// was made: the call's new jobs that were pending when inserted (those waiting for the job it
// cancelled end cancelled, or run when they ignore failed dependencies), and the holders the
// call's duplicates name (cancelled by a later job of the call). It returns the indexes of the
// new jobs it read again.
func rereadResults(x execer, res []store.InsertResult) (map[int]bool, error) {
	pending := make(map[int]bool)
	for i, r := range res {
		if !r.Duplicate && r.Job.State != store.StatePending {
			continue
		}
		j, err := getForUpdate(x, r.Job.ID)
		if err != nil {
			return nil, err
		}
		res[i].Job = j
		if !r.Duplicate {
			pending[i] = true
		}
	}
	return pending, nil
}

// insertRows inserts params[idx...] in one statement and fills their results. The ids of a
// multi-row INSERT are consecutive and in VALUES order: the transaction holds the write lock, and
// AUTOINCREMENT gives each row the next id.
func insertRows(x execer, now time.Time, params []store.InsertParams, idx []int, res []store.InsertResult, plans map[int]*depPlan) error {
	bare := true
	for _, i := range idx {
		p := &params[i]
		if !p.ExpiresAt.IsZero() || p.UniqueKey != "" || len(p.Tags) > 0 || len(p.Metadata) > 0 || p.Schedule != "" ||
			p.Workflow != "" || p.Step != "" || plans[i] != nil {
			bare = false
			break
		}
	}
	query, perRow := insertSQL[len(idx)], insertColumns
	if bare {
		query, perRow = bareSQL[len(idx)], bareColumns
	}
	created := micros(now)
	args := make([]any, 0, len(idx)*perRow)
	rows := make([]*store.JobRow, len(idx))
	for k, i := range idx {
		p := &params[i]
		j := newRow(p, now)
		plans[i].apply(j, now)
		rows[k] = j
		args = append(args, p.Kind, p.Queue, string(p.Args), p.Priority, string(j.State), p.MaxAttempts,
			micros(j.RunAt))
		if !bare {
			var tags any
			if len(p.Tags) > 0 {
				tags = jsonText(p.Tags)
			}
			var deps, errs any
			if len(j.DependsOn) > 0 {
				deps = jsonText(j.DependsOn)
			}
			if len(j.Errors) > 0 {
				errs = jsonText(j.Errors)
			}
			args = append(args, nullMicros(j.ExpiresAt), nullText(p.UniqueKey), tags, nullText(p.Metadata),
				nullText(p.Schedule), nullText(p.Workflow), nullText(p.Step), deps, j.IgnoreFailedDeps,
				nullMicros(j.FinalizedAt), errs, plans[i].waitsOn())
		}
		args = append(args, created)
	}
	r, err := x.exec(query, args...)
	if err != nil {
		return err
	}
	last, err := r.LastInsertId()
	if err != nil {
		return err
	}
	first := last - int64(len(idx)) + 1
	for k, i := range idx {
		rows[k].ID = first + int64(k)
		res[i] = store.InsertResult{Job: rows[k]}
	}
	return nil
}

// newRow is the job params describes, as inserted at now.
func newRow(p *store.InsertParams, now time.Time) *store.JobRow {
	j := &store.JobRow{
		Kind: p.Kind, Queue: p.Queue, Args: p.Args, Priority: p.Priority,
		State: store.StateAvailable, MaxAttempts: p.MaxAttempts, RunAt: now,
		ExpiresAt: truncate(p.ExpiresAt), UniqueKey: p.UniqueKey, Schedule: p.Schedule, Tags: p.Tags,
		Metadata: p.Metadata, Workflow: p.Workflow, Step: p.Step, IgnoreFailedDeps: p.IgnoreFailedDeps && hasDeps(p),
		CreatedAt: now,
	}
	if !p.RunAt.IsZero() {
		j.RunAt = truncate(p.RunAt)
		if j.RunAt.After(now) {
			j.State = store.StateScheduled
		}
	}
	return j
}

// uniqueStatesDefault is where a job holds its unique key unless InsertParams says otherwise
// (store.UniqueStatesDefault), as the statement takes it.
var uniqueStatesDefault = jsonText(store.UniqueStatesDefault())

// runAgainKeySQL is the unique_key of a job made to run again (Retry, RetryWorkflow): none when
// another job holds the key now, in a state that holds keys by default, so that two jobs never
// hold one key (PostgreSQL and Redis give the key up the same way). Of two steps of one key
// retried together, the first keeps it.
var runAgainKeySQL = `CASE WHEN unique_key IS NOT NULL AND EXISTS (SELECT 1 FROM jobs h
		WHERE h.unique_key = jobs.unique_key AND h.id <> jobs.id
			AND h.state IN (SELECT value FROM json_each('` + uniqueStatesDefault + `')))
	THEN NULL ELSE unique_key END`

// insertUnique inserts params[i], which has a unique key, unless a job holding that key exists.
// With Supersede, the holders that have not started are cancelled and the job is inserted even
// if another holder is running. It returns the jobs it cancelled, as they were.
func insertUnique(x execer, now time.Time, params []store.InsertParams, i int, res []store.InsertResult, plans map[int]*depPlan) ([]*store.JobRow, error) {
	p := &params[i]
	states := uniqueStatesDefault
	if len(p.UniqueStates) > 0 {
		states = jsonText(p.UniqueStates)
	}
	rows, err := x.query(`SELECT `+jobColumns+` FROM jobs
		WHERE unique_key = ? AND state IN (SELECT value FROM json_each(?))
		ORDER BY id DESC`, p.UniqueKey, states)
	if err != nil {
		return nil, err
	}
	holders, err := scanJobs(rows)
	if err != nil {
		return nil, err
	}
	if len(holders) > 0 && !p.Supersede {
		res[i] = store.InsertResult{Job: holders[0], Duplicate: true}
		return nil, nil
	}
	// A final job that holds its key (completed among its unique states) cannot be superseded:
	// the insert is a duplicate of it.
	for _, h := range holders {
		if h.State.Final() {
			res[i] = store.InsertResult{Job: h, Duplicate: true}
			return nil, nil
		}
	}
	var cancelled []*store.JobRow
	for _, h := range holders {
		switch h.State {
		case store.StateScheduled, store.StateAvailable, store.StateRetryable, store.StatePending:
			if _, err := x.exec(`UPDATE jobs SET state = 'cancelled', finalized_at = ? WHERE id = ?`,
				micros(now), h.ID); err != nil {
				return nil, err
			}
			cancelled = append(cancelled, h)
		case store.StateRunning:
			// It runs on, but gives its key up to the newer job: once that one has finished,
			// the key is free, not held by this one. SQLite keeps no unique states per job,
			// so the key itself goes.
			if _, err := x.exec(`UPDATE jobs SET unique_key = NULL WHERE id = ?`, h.ID); err != nil {
				return nil, err
			}
		}
	}
	return cancelled, insertRows(x, now, params, []int{i}, res, plans)
}
