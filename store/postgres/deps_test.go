package postgres

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/retryplan"
	"github.com/rotahq/rota/store/storetest"
)

// Stores with pools of their own are nodes sharing a database: the dependent's row serializes
// two last dependencies ending at once, and the insert's lock on its dependency serializes it
// with the dependency's completion. Each race has a schema of its own, as it counts its queues.
func TestDepRacesSeveralStores(t *testing.T) {
	t.Run("LastDepsEndAtOnce", func(t *testing.T) {
		schema := newSchema(t)
		storetest.LastDepsRace(t, openSchema(t, schema, WithAutoMigrate()), openSchema(t, schema), openSchema(t, schema))
	})
	t.Run("DepEndsWhileDependentInserted", func(t *testing.T) {
		schema := newSchema(t)
		storetest.InsertDepRace(t, openSchema(t, schema, WithAutoMigrate()), openSchema(t, schema), openSchema(t, schema))
	})
}

// A chain of a thousand steps, inserted in one call, is cancelled whole by the end of its first
// step: the resolution is a loop, whatever the chain's length.
func TestDepChainCancelled(t *testing.T) {
	const n = 1000
	clk := clockwork.NewFakeClockAt(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC))
	s := open(t, WithClock(clk))
	ps := make([]store.InsertParams, n+1)
	for i := range ps {
		ps[i] = job("k")
		ps[i].Workflow = "chain"
		if i > 0 {
			ps[i].DependsOnIndex = []int{i - 1}
		}
	}
	res := mustInsert(t, s, ps...)
	clk.Advance(time.Second)
	if _, err := s.Cancel(t.Context(), res[0].Job.ID); err != nil {
		t.Fatal(err)
	}
	wf, err := s.Workflows(t.Context(), store.WorkflowListParams{ID: "chain"})
	if err != nil || len(wf) != 1 || wf[0].Counts[store.StateCancelled] != n+1 {
		t.Fatalf("Workflows = %+v, %v; want %d cancelled", wf, err, n+1)
	}
	last := mustGet(t, s, res[n].Job.ID)
	want := store.DependencyError(res[n-1].Job.ID, store.StateCancelled)
	if len(last.Errors) != 1 || last.Errors[0].Error != want || !last.Errors[0].At.Equal(clk.Now()) || !last.FinalizedAt.Equal(clk.Now()) {
		t.Fatalf("last step: finalized %v, errors %+v; want %q at %v", last.FinalizedAt, last.Errors, want, clk.Now())
	}
	var edges int
	if err := s.pool.QueryRow(t.Context(), s.sql(`SELECT count(*) FROM {schema}.job_deps`)).Scan(&edges); err != nil || edges != 0 {
		t.Fatalf("%d edges left, %v", edges, err)
	}
}

// A job with a unique key that waits for another holds its key while it waits, and is a
// duplicate's answer; one that joins a job and is cancelled at its insert cancels that job.
func TestDepsWithUniqueKeys(t *testing.T) {
	s := open(t)
	root := mustInsert(t, s, job("k"))[0].Job
	p := job("k")
	p.DependsOn, p.UniqueKey = []int64{root.ID}, "u"
	first := mustInsert(t, s, p)[0]
	again := mustInsert(t, s, p)[0]
	if first.Job.State != store.StatePending || !again.Duplicate || again.Job.ID != first.Job.ID {
		t.Fatalf("first %+v, again %+v; want a pending job, then its duplicate", first.Job, again)
	}
	// In one call: the second job of the call is a duplicate of the first, and the third waits
	// for the job it found.
	q := job("k")
	q.UniqueKey = "v"
	w := job("k")
	w.DependsOnIndex = []int{1}
	res := mustInsert(t, s, q, q, w)
	if !res[1].Duplicate || res[1].Job.ID != res[0].Job.ID || !slices.Equal(mustGet(t, s, res[2].Job.ID).DependsOn, []int64{res[0].Job.ID}) {
		t.Fatalf("results %+v %+v %+v", res[0].Job, res[1], res[2].Job)
	}
	if _, err := s.Cancel(t.Context(), res[0].Job.ID); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, res[2].Job.ID); got.State != store.StateCancelled {
		t.Fatalf("job waiting for the key's holder, cancelled: %s", got.State)
	}

	cb := job("k")
	cb.DependsOn = []int64{root.ID}
	callback := mustInsert(t, s, cb)[0].Job
	if _, err := s.Cancel(t.Context(), first.Job.ID); err != nil {
		t.Fatal(err)
	}
	doomed := job("k")
	doomed.DependsOn, doomed.DependencyOf = []int64{first.Job.ID}, callback.ID
	if got := mustInsert(t, s, doomed)[0].Job; got.State != store.StateCancelled {
		t.Fatalf("job after a cancelled one inserted %s, want cancelled", got.State)
	}
	if got := mustGet(t, s, callback.ID); got.State != store.StateCancelled || len(got.Errors) != 1 {
		t.Fatalf("callback joined by a cancelled job: %s, errors %+v", got.State, got.Errors)
	}
}

// The dependency path runs in a caller's database/sql transaction too.
func TestInsertTxDepsDatabaseSQL(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()
	root := mustInsert(t, s, job("k"))[0].Job
	cb := job("k")
	cb.DependsOn, cb.IgnoreFailedDeps = []int64{root.ID}, true
	callback := mustInsert(t, s, cb)[0].Job

	a, b := job("k"), job("k")
	a.Workflow, a.Step, a.DependsOn = "wf", "a", []int64{root.ID}
	b.Workflow, b.Step, b.DependsOnIndex, b.DependencyOf = "wf", "b", []int{0}, callback.ID
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.InsertTx(ctx, tx, []store.InsertParams{a, b})
	if err != nil {
		t.Fatalf("InsertTx: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	steps, err := s.List(ctx, store.ListParams{Workflow: "wf"})
	if err != nil || len(steps) != 2 {
		t.Fatalf("List = %d steps, %v", len(steps), err)
	}
	if got := steps[1]; got.State != store.StatePending || got.Step != "b" || !slices.Equal(got.DependsOn, []int64{res[0].Job.ID}) {
		t.Fatalf("step b: %+v", got)
	}
	if got := mustGet(t, s, callback.ID); !slices.Equal(got.DependsOn, []int64{root.ID, res[1].Job.ID}) {
		t.Fatalf("callback DependsOn = %v", got.DependsOn)
	}
}

// Workflows and a workflow's steps are read through workflow_steps, never the whole table.
func TestWorkflowQueriesUseTheirIndex(t *testing.T) {
	s := open(t)
	mustInsert(t, s, benchJobs(5000)...)
	// Enough steps in enough workflows that reading them all would cost more than the index.
	steps := make([]store.InsertParams, 0, 3000)
	for i := range 3000 {
		p := job("k")
		p.Workflow = fmt.Sprintf("wf-%02d", i%100)
		steps = append(steps, p)
	}
	mustInsert(t, s, steps...)
	if _, err := s.pool.Exec(t.Context(), s.sql("ANALYZE {schema}.jobs, {schema}.workflow_steps")); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct{ name, sql, args string }{
		{"page", strings.Replace(workflowPageSQL, "{before}", `WHERE workflow < $2`, 1), "100, 'wf-50'"},
		{"one", workflowCountsSQL, "'wf-07'"},
		{"steps", workflowStepsSQL, "'wf-07'"},
		{"list", `SELECT ` + jobColumns + ` FROM {schema}.jobs
			WHERE id IN (SELECT job_id FROM {schema}.workflow_steps WHERE workflow = $1) ORDER BY id LIMIT $2`, "'wf-07', 100"},
	} {
		plan := explain(t, s, q.sql, q.args)
		if strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, "workflow_steps_pkey") {
			t.Errorf("%s: plan does not walk workflow_steps:\n%s", q.name, plan)
		}
	}
	// What jobs_ended looks for on the first end of a statement: the statement's other ends,
	// by their time.
	plan := explain(t, s, `SELECT id FROM {schema}.jobs j WHERE j.finalized_at = $1 AND j.has_dependents
		AND j.state IN `+finalStatesSQL+` AND EXISTS (SELECT 1 FROM {schema}.job_deps d WHERE d.dep_id = j.id)`, "now()")
	if strings.Contains(plan, "Seq Scan on jobs") || !strings.Contains(plan, "jobs_finalized") {
		t.Errorf("a statement's ends: plan does not read jobs_finalized:\n%s", plan)
	}
}

// explain returns the plan the server chooses for q with the parameter values args (SQL
// literals), as a caller's statement gets it.
func explain(t *testing.T, s *Store, q, args string, settings ...string) string {
	t.Helper()
	ctx := t.Context()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, set := range settings {
		if _, err := conn.Exec(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	if len(settings) > 0 {
		defer conn.Exec(ctx, "RESET ALL")
	}
	if _, err := conn.Exec(ctx, "PREPARE explained AS "+s.sql(q)); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "DEALLOCATE explained")
	rs, err := conn.Query(ctx, "EXPLAIN EXECUTE explained("+args+")")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var plan []string
	for rs.Next() {
		var line string
		if err := rs.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}

// Migration 007 spells the final states in SQL of its own: they must be the contract's.
func TestMigrationFinalStates(t *testing.T) {
	text, err := os.ReadFile("migrations/007_workflows.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NEW.state IN " + finalStatesSQL, "OLD.state NOT IN " + finalStatesSQL} {
		if !strings.Contains(string(text), want) {
			t.Errorf("migration 007 lacks %q", want)
		}
	}
}

// Two nodes completing, at once, two dependencies each of two jobs, crosswise: each statement
// resolves the dependents of all it ended together, in id order, so neither waits for the
// other's lock while holding one it wants. Resolving each ended job apart deadlocked about one
// round in seven.
func TestCrosswiseEndsDoNotDeadlock(t *testing.T) {
	schema := newSchema(t)
	s1, s2 := openSchema(t, schema, WithAutoMigrate()), openSchema(t, schema)
	ctx := t.Context()
	for round := range 200 {
		q := "cross-" + strconv.Itoa(round)
		p := store.InsertParams{Kind: "k", Queue: q, Args: []byte(`{}`), MaxAttempts: 3}
		left, right := p, p
		left.DependsOnIndex, right.DependsOnIndex = []int{1, 2}, []int{0, 3}
		res := mustInsert(t, s1, p, p, p, p, left, right)
		claimed, err := s1.Claim(ctx, store.ClaimParams{Queue: q, Kinds: []string{"k"}, Max: 4, Owner: "n", LeaseFor: time.Minute})
		if err != nil || len(claimed) != 4 {
			t.Fatalf("claimed %d, %v", len(claimed), err)
		}
		fence := make(map[int64]int64)
		for _, c := range claimed {
			fence[c.ID] = c.Fence
		}
		done := func(ks ...int) []store.Outcome {
			var outs []store.Outcome
			for _, k := range ks {
				id := res[k].Job.ID
				outs = append(outs, store.Outcome{ID: id, Fence: fence[id], State: store.StateCompleted})
			}
			return outs
		}
		var wg sync.WaitGroup
		var err1, err2 error
		wg.Go(func() { _, err1 = s1.Complete(ctx, done(0, 2)) })
		wg.Go(func() { _, err2 = s2.Complete(ctx, done(1, 3)) })
		wg.Wait()
		if err1 != nil || err2 != nil {
			t.Fatalf("round %d: %v; %v", round, err1, err2)
		}
		for _, k := range []int{4, 5} {
			if j := mustGet(t, s1, res[k].Job.ID); j.State != store.StateAvailable {
				t.Fatalf("round %d: job %d is %s, want available", round, j.ID, j.State)
			}
		}
	}
}

// A step waiting for a job outside its workflow that failed for good is not run again, nor
// what waits for it without ignoring failures; a step waiting for retried steps and running
// jobs waits for those.
func TestPlanRetry(t *testing.T) {
	const outsideFailed, outsideRunning = 100, 101
	steps := []retryplan.Step{
		{ID: 1, State: store.StateDiscarded},
		{ID: 2, State: store.StateCancelled, DependsOn: []int64{1, outsideRunning, 1}},
		{ID: 3, State: store.StateCancelled, DependsOn: []int64{outsideFailed}},
		{ID: 4, State: store.StateCancelled, DependsOn: []int64{3}},
		{ID: 5, State: store.StateCancelled, DependsOn: []int64{3, 2}, IgnoreFailed: true},
		{ID: 6, State: store.StateCompleted},
	}
	states := map[int64]store.State{outsideFailed: store.StateDiscarded, outsideRunning: store.StateRunning}
	for _, st := range steps {
		states[st.ID] = st.State
	}
	p := planRetry(steps, states)
	if !slices.Equal(p.ids, []int64{1, 2, 5}) || !slices.Equal(p.waits, []int32{0, 2, 1}) || !slices.Equal(p.awaited, []bool{true, true, false}) {
		t.Fatalf("retried %v waiting for %v (awaited %v), want [1 2 5] waiting for [0 2 1]", p.ids, p.waits, p.awaited)
	}
	if !slices.Equal(p.edgeDeps, []int64{1, outsideRunning, 2}) || !slices.Equal(p.edgeJobs, []int64{2, 2, 5}) || !slices.Equal(p.marked, []int64{outsideRunning}) {
		t.Fatalf("edges %v -> %v, marked %v", p.edgeDeps, p.edgeJobs, p.marked)
	}
}

// Migration 007 on a store holding jobs: they read as before, and a new job can wait for one.
func TestMigrateDepsOntoJobs(t *testing.T) {
	ctx := t.Context()
	s := openSchema(t, newSchema(t))
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.sql(`CREATE SCHEMA {schema};
			CREATE TABLE {schema}.migrations (version integer PRIMARY KEY, name text NOT NULL,
				applied_at timestamptz NOT NULL DEFAULT now())`)); err != nil {
			return err
		}
		for _, m := range migrations[:6] {
			if _, err := tx.Exec(ctx, s.sql(m.SQL)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, s.sql(`INSERT INTO {schema}.migrations (version, name) VALUES ($1, $2)`), m.Version, m.Name); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, s.sql(`INSERT INTO {schema}.jobs (kind, queue, state, max_attempts, run_at, created_at)
			VALUES ('k', 'default', 'available', 3, now(), now())`))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	old, err := s.List(ctx, store.ListParams{})
	if err != nil || len(old) != 1 || old[0].DependsOn != nil || old[0].IgnoreFailedDeps || old[0].Workflow != "" {
		t.Fatalf("job from before the migration: %+v, %v", old, err)
	}
	p := job("k")
	p.DependsOn = []int64{old[0].ID}
	waiting := mustInsert(t, s, p)[0].Job
	claimed, err := s.Claim(ctx, store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 1, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(claimed) != 1 || claimed[0].ID != old[0].ID {
		t.Fatalf("claimed %d jobs, %v; want the old one", len(claimed), err)
	}
	if _, err := s.Complete(ctx, []store.Outcome{{ID: claimed[0].ID, Fence: claimed[0].Fence, State: store.StateCompleted}}); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, waiting.ID); got.State != store.StateAvailable {
		t.Fatalf("job waiting for the old one: %s after it completed", got.State)
	}
}

// A step's row in workflow_steps goes with the step, however it is deleted: the listing would
// still be right without it, but would walk ever more rows of workflows long gone.
func TestWorkflowStepsGoWithTheirJobs(t *testing.T) {
	s := open(t)
	p := job("k")
	p.Workflow = "wf-gone"
	res := mustInsert(t, s, p, p)
	steps := func() (n int) {
		t.Helper()
		if err := s.pool.QueryRow(t.Context(), s.sql(`SELECT count(*) FROM {schema}.workflow_steps`)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := steps(); n != 2 {
		t.Fatalf("after the insert: %d rows, want 2", n)
	}
	if err := s.Delete(t.Context(), res[0].Job.ID); err != nil {
		t.Fatal(err)
	}
	if n := steps(); n != 1 {
		t.Fatalf("after a delete: %d rows, want 1", n)
	}
	if _, err := s.pool.Exec(t.Context(), s.sql(`DELETE FROM {schema}.jobs`)); err != nil {
		t.Fatal(err)
	}
	if n := steps(); n != 0 {
		t.Fatalf("after deleting the rest: %d rows, want 0", n)
	}
}

// A resolution deletes the ended jobs' edges through job_deps' key however many edges wait
// (migration 013): with the statistics of a table full of a fan-in's edges, the join with the
// unnested ids it replaced was planned as a scan of every edge, for every batch of completions.
// This is the shape of resolve_dependents' DELETE, planned for the values at hand as plpgsql
// does for a statement's first runs.
func TestResolutionDeletesEdgesByKey(t *testing.T) {
	s := open(t)
	// A fan-out/fan-in before its root ends: 10,000 edges from the root, one from each step.
	root := mustInsert(t, s, job("k"))[0].Job
	ps := benchJobs(10_000)
	for i := range ps {
		ps[i].DependsOn = []int64{root.ID}
	}
	steps := mustInsert(t, s, ps...)
	final := job("k")
	for _, r := range steps {
		final.DependsOn = append(final.DependsOn, r.Job.ID)
	}
	mustInsert(t, s, final)
	var ended []string // a batch of completed steps
	for _, r := range steps[:100] {
		ended = append(ended, strconv.FormatInt(r.Job.ID, 10))
	}
	if _, err := s.pool.Exec(t.Context(), s.sql("ANALYZE {schema}.job_deps")); err != nil {
		t.Fatal(err)
	}
	plan := explain(t, s, `DELETE FROM {schema}.job_deps d WHERE d.dep_id = ANY ($1::bigint[]) RETURNING d.job_id, d.dep_id`,
		"'{"+strings.Join(ended, ",")+"}'", "SET plan_cache_mode = force_custom_plan")
	if strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, "job_deps_pkey") {
		t.Errorf("the edges of 100 ended jobs are not deleted through the key:\n%s", plan)
	}
}

// The first trigger call of a statement resolves the statement's ends and lists them for the
// statement's other calls; a second statement that ends another job resolves its own, however
// the two are sent: in one transaction (now() is the transaction's, so both end at the same
// time), in one simple-protocol message (they share a start time too), in a DO block.
func TestEndsOfTwoStatementsOfATransactionResolveEach(t *testing.T) {
	s := open(t)
	pair := func() (deps, dependents []int64) {
		for range 2 {
			dep := mustInsert(t, s, job("k"))[0].Job.ID
			p := job("k")
			p.DependsOn = []int64{dep}
			deps, dependents = append(deps, dep), append(dependents, mustInsert(t, s, p)[0].Job.ID)
		}
		return deps, dependents
	}
	end := func(id int64) string {
		return s.sql(`UPDATE {schema}.jobs SET state = 'completed', finalized_at = now() WHERE id = ` + strconv.FormatInt(id, 10))
	}
	released := func(how string, ids []int64) {
		t.Helper()
		for _, id := range ids {
			if j := mustGet(t, s, id); j.State != store.StateAvailable {
				t.Errorf("%s: dependent %d is %s after its dependency completed; want available", how, id, j.State)
			}
		}
	}

	deps, dependents := pair()
	err := pgx.BeginFunc(t.Context(), s.pool, func(tx pgx.Tx) error {
		for _, id := range deps {
			if _, err := tx.Exec(t.Context(), end(id)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	released("two statements of a transaction", dependents)

	deps, dependents = pair()
	conn, err := s.pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Conn().PgConn().Exec(t.Context(), end(deps[0])+"; "+end(deps[1])).ReadAll(); err != nil {
		t.Fatal(err)
	}
	released("one simple-protocol message", dependents)

	deps, dependents = pair()
	if _, err := s.pool.Exec(t.Context(), "DO $$ BEGIN "+end(deps[0])+"; "+end(deps[1])+"; END $$"); err != nil {
		t.Fatal(err)
	}
	released("a DO block", dependents)
}
