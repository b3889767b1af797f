package rota_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

// stepArgs is a workflow step that records its name and returns it as its result.
type stepArgs struct {
	Name string `json:"name"`
	Fail bool   `json:"fail,omitempty"`
}

func (stepArgs) Kind() string { return "step" }

// journal records what steps ran, in order.
type journal struct {
	mu  sync.Mutex
	ran []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ran = append(j.ran, s)
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.ran)
}

// startWorkflowNode runs a node on a fresh SQLite store with the given workers.
func startWorkflowNode(t *testing.T, add func(*rota.Workers)) *rota.Client {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "rota.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	workers := rota.NewWorkers()
	add(workers)
	node, err := rota.NewNode(rota.Config{Store: st, Workers: workers, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Stop(context.Background()) })
	return node.Client()
}

// wait returns job id once it has ended, however.
func wait(t *testing.T, c *rota.Client, id int64) *rota.JobRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	j, err := c.Wait(ctx, id)
	if _, failed := errors.AsType[*rota.JobFailedError](err); err != nil && !failed {
		t.Fatalf("wait for job %d: %v", id, err)
	}
	return j
}

// A step one waited for that was deleted (or pruned) since it ended is left out of its
// Dependencies: the other steps' results are still read, and asking for its result says why.
func TestDependencyDeletedSinceItEnded(t *testing.T) {
	var c *rota.Client
	got := make(chan string, 2)
	c = startWorkflowNode(t, func(w *rota.Workers) {
		rota.AddWorker(w, rota.WorkFunc[stepArgs](func(ctx context.Context, job *rota.Job[stepArgs]) error {
			switch job.Args.Name {
			case "second": // deletes the first step, ended before it started
				if err := c.Delete(ctx, job.DependsOn[0]); err != nil {
					return err
				}
			case "merge":
				var second string
				if err := job.StepResult(ctx, "second", &second); err != nil {
					got <- "error: " + err.Error()
				} else {
					got <- second
				}
				var first string
				got <- fmt.Sprint(job.StepResult(ctx, "first", &first))
			}
			return job.SetResult(job.Args.Name + "!")
		}), nil)
	})
	wf := rota.NewWorkflow()
	wf.Add("first", stepArgs{Name: "first"}, nil)
	wf.Add("second", stepArgs{Name: "second"}, nil).After("first")
	wf.Add("merge", stepArgs{Name: "merge"}, nil).After("first", "second")
	res, err := c.InsertWorkflow(t.Context(), wf)
	if err != nil {
		t.Fatal(err)
	}
	if j := wait(t, c, res.Steps["merge"].ID); j.State != rota.StateCompleted {
		t.Fatalf("merge ended %s: %+v", j.State, j.Errors)
	}
	if s := <-got; s != "second!" {
		t.Errorf("the result of the step still there: %q, want second!", s)
	}
	if s := <-got; !strings.Contains(s, `step named "first", or it was deleted or pruned since`) {
		t.Errorf("the result of the deleted step: %s", s)
	}
}

// Steps run after the steps they wait for, and read their results.
func TestWorkflowRunsInDependencyOrder(t *testing.T) {
	var log journal
	var merged atomic.Value
	c := startWorkflowNode(t, func(w *rota.Workers) {
		rota.AddWorker(w, rota.WorkFunc[stepArgs](func(ctx context.Context, job *rota.Job[stepArgs]) error {
			log.add(job.Args.Name)
			if job.Args.Name == "merge" {
				var a, b string
				if err := job.StepResult(ctx, "fetch-a", &a); err != nil {
					return err
				}
				if err := job.StepResult(ctx, "fetch-b", &b); err != nil {
					return err
				}
				merged.Store(a + "+" + b)
			}
			return job.SetResult(job.Args.Name + "!")
		}), nil)
	})
	wf := rota.NewWorkflow()
	wf.Add("merge", stepArgs{Name: "merge"}, nil).After("fetch-a", "fetch-b")
	wf.Add("start", stepArgs{Name: "start"}, nil)
	wf.Add("fetch-a", stepArgs{Name: "fetch-a"}, nil).After("start")
	wf.Add("fetch-b", stepArgs{Name: "fetch-b"}, nil).After("start")
	res, err := c.InsertWorkflow(t.Context(), wf)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Steps["merge"]; got.State != rota.StatePending || got.Workflow != res.ID || got.Step != "merge" {
		t.Fatalf("merge inserted %s in workflow %q as step %q", got.State, got.Workflow, got.Step)
	}
	if j := wait(t, c, res.Steps["merge"].ID); j.State != rota.StateCompleted {
		t.Fatalf("merge ended %s: %+v", j.State, j.Errors)
	}
	ran := log.list()
	pos := func(s string) int { return slices.Index(ran, s) }
	if len(ran) != 4 || pos("start") != 0 || pos("merge") != 3 {
		t.Errorf("ran %v, want start first and merge last", ran)
	}
	if got := merged.Load(); got != "fetch-a!+fetch-b!" {
		t.Errorf("merge read %v, want the two fetch results", got)
	}
	info, err := c.Workflow(t.Context(), res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Steps) != 4 || info.Counts[rota.StateCompleted] != 4 || rota.WorkflowStatus(info.Counts) != "completed" {
		t.Errorf("workflow: %d steps, counts %v", len(info.Steps), info.Counts)
	}
	list, err := c.Workflows(t.Context(), rota.WorkflowListParams{})
	if err != nil || len(list) != 1 || list[0].ID != res.ID {
		t.Errorf("Workflows = %+v, %v", list, err)
	}
}

// A workflow that names a missing step, repeats a name or waits in a circle is refused, and
// nothing of it is inserted.
func TestWorkflowRefusedAtInsert(t *testing.T) {
	c := startWorkflowNode(t, func(w *rota.Workers) {
		rota.AddWorker(w, rota.WorkFunc[stepArgs](func(context.Context, *rota.Job[stepArgs]) error { return nil }), nil)
	})
	cases := map[string]struct {
		build func(*rota.Workflow)
		want  string
	}{
		"dangling": {func(w *rota.Workflow) { w.Add("a", stepArgs{}, nil).After("nope") }, `waits for "nope", which is not a step`},
		"repeated": {func(w *rota.Workflow) { w.Add("a", stepArgs{}, nil); w.Add("a", stepArgs{}, nil) }, `two steps are named "a"`},
		"self":     {func(w *rota.Workflow) { w.Add("a", stepArgs{}, nil).After("a") }, `step "a" waits for itself`},
		"cycle": {func(w *rota.Workflow) {
			w.Add("a", stepArgs{}, nil).After("c")
			w.Add("b", stepArgs{}, nil).After("a")
			w.Add("c", stepArgs{}, nil).After("b")
			w.Add("d", stepArgs{}, nil)
		}, "steps a, b, c wait for each other"},
		"empty":    {func(*rota.Workflow) {}, "at least one step"},
		"bad name": {func(w *rota.Workflow) { w.Add("a b", stepArgs{}, nil) }, `step name "a b"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wf := rota.NewWorkflow()
			tc.build(wf)
			_, err := c.InsertWorkflow(t.Context(), wf)
			if !errors.Is(err, rota.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("InsertWorkflow: %v; want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
	if rows, _ := c.List(t.Context(), rota.ListParams{}); len(rows) != 0 {
		t.Errorf("%d jobs inserted by refused workflows", len(rows))
	}
}

// A failed step cancels the steps after it, naming it; RetryWorkflow runs them again once the
// cause is fixed, leaving completed steps alone.
func TestWorkflowFailureAndRetry(t *testing.T) {
	var log journal
	var fixed atomic.Bool
	c := startWorkflowNode(t, func(w *rota.Workers) {
		rota.AddWorker(w, rota.WorkFunc[stepArgs](func(ctx context.Context, job *rota.Job[stepArgs]) error {
			log.add(job.Args.Name)
			if job.Args.Fail && !fixed.Load() {
				return errors.New("export is not there")
			}
			return nil
		}), nil)
	})
	one := &rota.InsertOpts{MaxAttempts: 1}
	wf := rota.NewWorkflow()
	wf.Add("export", stepArgs{Name: "export"}, one)
	wf.Add("bill", stepArgs{Name: "bill", Fail: true}, one).After("export")
	wf.Add("mail", stepArgs{Name: "mail"}, one).After("bill")
	wf.Add("report", stepArgs{Name: "report"}, one).After("bill").IgnoreFailedDeps()
	res, err := c.InsertWorkflow(t.Context(), wf)
	if err != nil {
		t.Fatal(err)
	}
	mail := wait(t, c, res.Steps["mail"].ID)
	bill := res.Steps["bill"].ID
	if mail.State != rota.StateCancelled || len(mail.Errors) != 1 || mail.Errors[0].Error != store.DependencyError(bill, rota.StateDiscarded) {
		t.Fatalf("mail ended %s with %+v; want cancelled naming job %d", mail.State, mail.Errors, bill)
	}
	if report := wait(t, c, res.Steps["report"].ID); report.State != rota.StateCompleted {
		t.Errorf("report (runs anyway) ended %s", report.State)
	}
	info, err := c.Workflow(t.Context(), res.ID)
	if err != nil || rota.WorkflowStatus(info.Counts) != "failed" {
		t.Fatalf("workflow %v, %v; want failed", info, err)
	}

	fixed.Store(true)
	changed, err := c.RetryWorkflow(t.Context(), res.ID)
	if err != nil || len(changed) != 2 {
		t.Fatalf("RetryWorkflow changed %d steps, %v; want bill and mail", len(changed), err)
	}
	if j := wait(t, c, res.Steps["mail"].ID); j.State != rota.StateCompleted {
		t.Fatalf("mail after retry ended %s", j.State)
	}
	if got, want := log.list(), []string{"export", "bill", "report", "bill", "mail"}; !slices.Equal(got, want) {
		t.Errorf("ran %v, want %v", got, want)
	}
	if _, err := c.RetryWorkflow(t.Context(), "w-none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RetryWorkflow(unknown) = %v, want ErrNotFound", err)
	}
}

// Cancelling a workflow stops its running step through its context and ends the waiting ones.
func TestCancelWorkflow(t *testing.T) {
	started := make(chan struct{})
	c := startWorkflowNode(t, func(w *rota.Workers) {
		rota.AddWorker(w, rota.WorkFunc[stepArgs](func(ctx context.Context, job *rota.Job[stepArgs]) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		}), nil)
	})
	wf := rota.NewWorkflow()
	wf.Add("slow", stepArgs{Name: "slow"}, nil)
	wf.Add("next", stepArgs{Name: "next"}, nil).After("slow")
	res, err := c.InsertWorkflow(t.Context(), wf)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if _, err := c.CancelWorkflow(t.Context(), res.ID); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"slow", "next"} {
		if j := wait(t, c, res.Steps[name].ID); j.State != rota.StateCancelled {
			t.Errorf("%s ended %s, want cancelled", name, j.State)
		}
	}
}

// Jobs added to one batch by concurrent calls are named apart, by their places in the batch.
func TestAddToBatchConcurrently(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "rota.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := rota.NewClient(st, nil)
	res, err := c.InsertBatch(t.Context(), rota.NewBatch(batchDone{}, nil).Add(batchJob{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	const adders = 8
	var wg sync.WaitGroup
	for i := range adders {
		wg.Go(func() {
			if _, err := c.AddToBatch(t.Context(), res.Callback.ID, rota.InsertManyParams{Args: batchJob{N: i + 1}}); err != nil {
				t.Errorf("AddToBatch: %v", err)
			}
		})
	}
	wg.Wait()
	steps := map[string]bool{}
	for _, id := range mustGet(t, c, res.Callback.ID).DependsOn {
		steps[mustGet(t, c, id).Step] = true
	}
	for i := 1; i <= adders+1; i++ {
		if s := fmt.Sprintf("job-%d", i); !steps[s] {
			t.Errorf("no step %q in the batch; its steps are %v", s, steps)
		}
	}
}

// Jobs added to a batch are named apart from the batch's own jobs, even when a job of the batch
// was a duplicate of another of its jobs.
func TestAddToBatchAfterDuplicateInBatch(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "rota.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := rota.NewClient(st, nil)
	page := &rota.InsertOpts{UniqueKey: "page-a"}
	b := rota.NewBatch(batchDone{}, nil).Add(batchJob{N: 1}, page).Add(batchJob{N: 1}, page).Add(batchJob{N: 2}, nil)
	res, err := c.InsertBatch(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	added, err := c.AddToBatch(t.Context(), res.Callback.ID, rota.InsertManyParams{Args: batchJob{N: 3}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int64{}
	for _, id := range mustGet(t, c, res.Callback.ID).DependsOn {
		j := mustGet(t, c, id)
		if other, ok := seen[j.Step]; ok {
			t.Errorf("jobs %d and %d of the batch are both step %q (added job: %q)", other, id, j.Step, added[0].Job.Step)
		}
		seen[j.Step] = id
	}
	if len(seen) != 3 || added[0].Job.Step != "job-3" {
		t.Errorf("the batch's steps are %v and the added job is %q; want job-1, job-2 and the added job-3", seen, added[0].Job.Step)
	}
}

// mustGet returns job id.
func mustGet(t *testing.T, c *rota.Client, id int64) *rota.JobRow {
	t.Helper()
	j, err := c.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

type batchJob struct {
	N int `json:"n"`
}

func (batchJob) Kind() string { return "batch-job" }

type batchDone struct{}

func (batchDone) Kind() string { return "batch-done" }

// A batch's callback runs once, after every job ended however it ended, and reads how they
// ended; jobs added while it is open are waited for, and adding after it ran is refused.
func TestBatchCallback(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	counts := make(chan rota.BatchCounts, 2)
	c := startWorkflowNode(t, func(w *rota.Workers) {
		rota.AddWorker(w, rota.WorkFunc[batchJob](func(ctx context.Context, job *rota.Job[batchJob]) error {
			if job.Args.N == 0 {
				<-release // the first job holds the batch open
			}
			if job.Args.N%3 == 1 {
				return rota.Cancel(fmt.Errorf("job %d gives up", job.Args.N))
			}
			return nil
		}), nil)
		rota.AddWorker(w, rota.WorkFunc[batchDone](func(ctx context.Context, job *rota.Job[batchDone]) error {
			calls.Add(1)
			n, err := job.BatchCounts(ctx)
			counts <- n
			return err
		}), nil)
	})
	b := rota.NewBatch(batchDone{}, nil)
	for i := range 10 {
		b.Add(batchJob{N: i}, nil)
	}
	res, err := c.InsertBatch(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	added, err := c.AddToBatch(t.Context(), res.Callback.ID, rota.InsertManyParams{Args: batchJob{N: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if got := added[0].Job.Step; got != "job-11" {
		t.Errorf("the job added to a batch of 10 is step %q, want job-11", got)
	}
	close(release)
	if j := wait(t, c, res.Callback.ID); j.State != rota.StateCompleted {
		t.Fatalf("callback ended %s", j.State)
	}
	if j := wait(t, c, added[0].Job.ID); j.State != rota.StateCancelled || j.Workflow != res.ID {
		t.Errorf("added job (N=10, gives up) ended %s in workflow %q", j.State, j.Workflow)
	}
	// 11 jobs: N = 1, 4, 7, 10 give up.
	if got := <-counts; got != (rota.BatchCounts{Completed: 7, Cancelled: 4}) || got.Failed() != 4 {
		t.Errorf("callback counted %+v, want 7 completed, 4 cancelled", got)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("callback ran %d times, want once", n)
	}
	_, err = c.AddToBatch(t.Context(), res.Callback.ID, rota.InsertManyParams{Args: batchJob{N: 11}})
	if !errors.Is(err, store.ErrNotPending) {
		t.Errorf("adding to a finished batch: %v, want ErrNotPending", err)
	}
}

// counting is a store that counts its Get calls.
type counting struct {
	store.Store
	gets atomic.Int64
}

func (c *counting) Get(ctx context.Context, id int64) (*store.JobRow, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, id)
}

// A fan-in step reads the many steps it waited for a page of its workflow at a time, not one
// store call each, in the order it waited for them; one deleted since it ended is left out.
func TestFanInReadsItsDependenciesByThePage(t *testing.T) {
	const parts = 300
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "rota.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cs := &counting{Store: st}
	var c *rota.Client
	type read struct {
		names []string
		gets  int64
		err   error
	}
	got := make(chan read, 1)
	workers := rota.NewWorkers()
	rota.AddWorker(workers, rota.WorkFunc[stepArgs](func(ctx context.Context, job *rota.Job[stepArgs]) error {
		if job.Args.Name != "merge" {
			return job.SetResult(job.Args.Name)
		}
		if err := c.Delete(ctx, job.DependsOn[7]); err != nil {
			return err
		}
		before := cs.gets.Load()
		deps, err := job.Dependencies(ctx)
		r := read{gets: cs.gets.Load() - before, err: err}
		for _, d := range deps {
			var name string
			if err := json.Unmarshal(d.Result, &name); err != nil {
				return err
			}
			r.names = append(r.names, name)
		}
		got <- r
		return nil
	}), nil)
	node, err := rota.NewNode(rota.Config{Store: cs, Workers: workers, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	c = node.Client()
	wf := rota.NewWorkflow()
	names := make([]string, parts)
	for i := range names {
		names[i] = fmt.Sprint("part-", parts-i) // waited for in an order that is not the ids'
		wf.Add(names[i], stepArgs{Name: names[i]}, nil)
	}
	wf.Add("merge", stepArgs{Name: "merge"}, nil).After(names...)
	if _, err := c.InsertWorkflow(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	if err := node.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Stop(context.Background()) })
	var r read
	select {
	case r = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the merge step did not run within 30s")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := slices.Delete(slices.Clone(names), 7, 8)
	if !slices.Equal(r.names, want) {
		t.Errorf("dependencies read: %d, want the %d left in the order waited for:\n got %v\nwant %v", len(r.names), len(want), r.names, want)
	}
	if r.gets > 2 {
		t.Errorf("reading %d dependencies took %d Get calls; want them read by the page", parts, r.gets)
	}
}
