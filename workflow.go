package rota

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/rotahq/rota/store"
)

// Workflow is a graph of jobs inserted in one transaction: named steps, each of which may wait
// for others (After). A step becomes available once every step it waits for has completed; when
// one of them is discarded, cancelled or expires, the step ends cancelled, and so do the steps
// after it, unless it was added to run anyway (IgnoreFailedDeps). Every step is an ordinary job
// otherwise: retries, timeouts, unique keys, limits and rescue apply to each.
//
//	wf := rota.NewWorkflow()
//	wf.Add("fetch-a", FetchArgs{URL: a}, nil)
//	wf.Add("fetch-b", FetchArgs{URL: b}, nil)
//	wf.Add("merge", MergeArgs{}, nil).After("fetch-a", "fetch-b")
//	res, err := client.InsertWorkflow(ctx, wf)
//
// A step's handler reads the results of the steps it waited for with Job.StepResult.
type Workflow struct {
	steps  []*Step
	byName map[string]*Step
}

// Step is one job of a Workflow.
type Step struct {
	name         string
	args         Args
	opts         *InsertOpts
	after        []string
	ignoreFailed bool
}

// NewWorkflow returns an empty workflow.
func NewWorkflow() *Workflow {
	return &Workflow{byName: make(map[string]*Step)}
}

// Add adds a step named name running args with opts (nil for the defaults). Names are unique in
// a workflow; InsertWorkflow refuses a workflow that repeats one.
func (w *Workflow) Add(name string, args Args, opts *InsertOpts) *Step {
	s := &Step{name: name, args: args, opts: opts}
	w.steps = append(w.steps, s)
	if _, taken := w.byName[name]; !taken {
		w.byName[name] = s
	}
	return s
}

// After makes the step wait for the named steps.
func (s *Step) After(names ...string) *Step {
	s.after = append(s.after, names...)
	return s
}

// IgnoreFailedDeps makes the step run once every step it waits for has ended, however each
// ended: a clean-up or a report that must run whatever happened.
func (s *Step) IgnoreFailedDeps() *Step {
	s.ignoreFailed = true
	return s
}

// WorkflowResult is an inserted workflow: its id and each step's job by name.
type WorkflowResult struct {
	ID    string
	Steps map[string]*JobRow
}

// WorkflowStats counts a workflow's steps by state; see store.WorkflowStats.
type WorkflowStats = store.WorkflowStats

// WorkflowListParams pages through workflows; see store.WorkflowListParams.
type WorkflowListParams = store.WorkflowListParams

// ErrCycle is wrapped by the error of a workflow whose steps wait for each other in a circle.
var ErrCycle = errors.New("workflow has a cycle")

// InsertWorkflow validates w (names, dangling After names, cycles, every step's args and
// options) and inserts all its steps in one transaction, under a new workflow id.
func (c *Client) InsertWorkflow(ctx context.Context, w *Workflow) (*WorkflowResult, error) {
	order, err := w.order()
	if err != nil {
		return nil, fmt.Errorf("rota: insert workflow: %w", err)
	}
	id := c.newWorkflowID()
	index := make(map[string]int, len(order))
	params := make([]store.InsertParams, len(order))
	for i, s := range order {
		p, err := c.params(s.args, s.opts)
		if err != nil {
			return nil, fmt.Errorf("rota: insert workflow: step %q: %w", s.name, err)
		}
		p.Workflow, p.Step, p.IgnoreFailedDeps = id, s.name, s.ignoreFailed
		for _, a := range s.after {
			p.DependsOnIndex = append(p.DependsOnIndex, index[a])
		}
		index[s.name] = i
		params[i] = p
	}
	busy := make([]InsertManyParams, len(order))
	for i, s := range order {
		busy[i] = InsertManyParams{Args: s.args, Opts: s.opts}
	}
	if err := c.checkBusy(ctx, busy); err != nil {
		return nil, err
	}
	res, err := c.insertParams(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("rota: insert workflow: %w", plainly(err))
	}
	out := &WorkflowResult{ID: id, Steps: make(map[string]*JobRow, len(res))}
	for i, r := range res {
		out.Steps[order[i].name] = r.Job
	}
	return out, nil
}

// order checks the workflow and returns its steps so that each comes after those it waits for
// (Kahn's algorithm, keeping the order of Add among steps that are free at once).
func (w *Workflow) order() ([]*Step, error) {
	if len(w.steps) == 0 {
		return nil, fmt.Errorf("%w: a workflow needs at least one step", ErrInvalid)
	}
	waits := make(map[string]int, len(w.steps))
	next := make(map[string][]*Step)
	for _, s := range w.steps {
		if err := validName("step name", s.name); err != nil {
			return nil, err
		}
		if w.byName[s.name] != s {
			return nil, fmt.Errorf("%w: two steps are named %q", ErrInvalid, s.name)
		}
		seen := make(map[string]bool, len(s.after))
		for _, a := range s.after {
			if _, ok := w.byName[a]; !ok {
				return nil, fmt.Errorf("%w: step %q waits for %q, which is not a step of the workflow", ErrInvalid, s.name, a)
			}
			if a == s.name {
				return nil, fmt.Errorf("%w: %w: step %q waits for itself", ErrInvalid, ErrCycle, s.name)
			}
			if !seen[a] {
				seen[a] = true
				waits[s.name]++
				next[a] = append(next[a], s)
			}
		}
	}
	var order, free []*Step
	for _, s := range w.steps {
		if waits[s.name] == 0 {
			free = append(free, s)
		}
	}
	for len(free) > 0 {
		s := free[0]
		free = free[1:]
		order = append(order, s)
		for _, n := range next[s.name] {
			if waits[n.name]--; waits[n.name] == 0 {
				free = append(free, n)
			}
		}
	}
	if len(order) < len(w.steps) {
		var stuck []string
		for _, s := range w.steps {
			if waits[s.name] > 0 {
				stuck = append(stuck, s.name)
			}
		}
		return nil, fmt.Errorf("%w: %w: steps %s wait for each other", ErrInvalid, ErrCycle, strings.Join(stuck, ", "))
	}
	return order, nil
}

// newWorkflowID returns an id that sorts after every id made before it by this clock: the
// milliseconds since the epoch, then random bits, in hexadecimal, so that listing workflows by
// id lists the newest first.
func (c *Client) newWorkflowID() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	r := uint64(b[0])<<32 | uint64(binary.BigEndian.Uint32(b[1:]))
	return fmt.Sprintf("w%012x%010x", c.clock.Now().UnixMilli(), r)
}

// WorkflowInfo is one workflow: its counts and every step.
type WorkflowInfo struct {
	WorkflowStats
	Steps []*JobRow `json:"steps"`
}

// Workflow returns the workflow id with every step, or an error wrapping store.ErrNotFound.
func (c *Client) Workflow(ctx context.Context, id string) (*WorkflowInfo, error) {
	if !store.Storable(id) {
		return nil, fmt.Errorf("rota: get workflow %q: %w", id, store.ErrNotFound)
	}
	stats, err := c.store.Workflows(ctx, store.WorkflowListParams{ID: id})
	if err != nil {
		return nil, fmtErr("get workflow", err)
	}
	if len(stats) == 0 {
		return nil, fmt.Errorf("rota: get workflow %s: %w", id, store.ErrNotFound)
	}
	steps, err := c.workflowSteps(ctx, id)
	if err != nil {
		return nil, err
	}
	return &WorkflowInfo{WorkflowStats: stats[0], Steps: steps}, nil
}

func (c *Client) workflowSteps(ctx context.Context, id string) ([]*JobRow, error) {
	var all []*JobRow
	p := store.ListParams{Workflow: id, Limit: 1000}
	for {
		page, err := c.store.List(ctx, p)
		if err != nil {
			return nil, fmtErr("list workflow steps", err)
		}
		all = append(all, page...)
		if len(page) < p.Limit {
			return all, nil
		}
		p.AfterID = page[len(page)-1].ID
	}
}

// Workflows returns a page of workflows, newest first.
func (c *Client) Workflows(ctx context.Context, p WorkflowListParams) ([]WorkflowStats, error) {
	if !store.Storable(p.ID) || !store.Storable(p.Before) {
		return nil, fmt.Errorf("rota: list workflows: %w: id %q or before %q is not valid UTF-8 text without NUL", ErrInvalid, p.ID, p.Before)
	}
	out, err := c.store.Workflows(ctx, p)
	if err != nil {
		return nil, fmtErr("list workflows", err)
	}
	return out, nil
}

// CancelWorkflow cancels every step of workflow id that has not ended: waiting ones end
// cancelled at once, running ones through their context, jobs added to a batch while it runs
// too. It returns the steps as Cancel left them.
func (c *Client) CancelWorkflow(ctx context.Context, id string) ([]*JobRow, error) {
	if !store.Storable(id) {
		return nil, fmt.Errorf("rota: cancel workflow %q: %w", id, store.ErrNotFound)
	}
	steps, err := c.workflowSteps(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("rota: cancel workflow %s: %w", id, store.ErrNotFound)
	}
	var out []*JobRow
	asked := make(map[int64]bool)
	for {
		cancelled := 0
		for _, s := range cancelOrder(steps) {
			if s.State.Final() || asked[s.ID] {
				continue
			}
			asked[s.ID] = true
			row, err := c.Cancel(ctx, s.ID)
			if err != nil {
				return out, fmt.Errorf("rota: cancel workflow %s: %w", id, err)
			}
			out = append(out, row)
			cancelled++
		}
		if cancelled == 0 {
			return out, nil
		}
		// A job may have joined a batch between the listing and its callback's cancel: the
		// steps are listed again until a listing shows none left to cancel. Once the callback
		// is cancelled nothing can join, so the second listing is nearly always the last.
		if steps, err = c.workflowSteps(ctx, id); err != nil {
			return out, err
		}
	}
}

// cancelOrder returns steps with each one before the steps it waits for, latest first where that
// leaves a choice: cancelled in this order, no step sees what it waits for end first, which
// would release it (a batch's callback ignores failed jobs, and the jobs added to its batch have
// greater ids than it). A pass over the steps, latest first, takes every step whose dependents
// are all taken; the passes go on until all are.
func cancelOrder(steps []*JobRow) []*JobRow {
	at := make(map[int64]int, len(steps))
	for i, s := range steps {
		at[s.ID] = i
	}
	dependents := make([]int, len(steps)) // of each step, those in the workflow not taken yet
	for _, s := range steps {
		for _, d := range s.DependsOn {
			if i, ok := at[d]; ok {
				dependents[i]++
			}
		}
	}
	out := make([]*JobRow, 0, len(steps))
	taken := make([]bool, len(steps))
	for len(out) < len(steps) {
		before := len(out)
		for i := len(steps) - 1; i >= 0; i-- {
			if taken[i] || dependents[i] > 0 {
				continue
			}
			taken[i] = true
			out = append(out, steps[i])
			for _, d := range steps[i].DependsOn {
				if j, ok := at[d]; ok {
					dependents[j]--
				}
			}
		}
		if len(out) == before { // a cycle, which no insert makes: the rest latest first
			for i := len(steps) - 1; i >= 0; i-- {
				if !taken[i] {
					out = append(out, steps[i])
				}
			}
		}
	}
	return out
}

// RetryWorkflow runs the steps of workflow id that failed (discarded, cancelled, expired) again,
// in order: the first failed ones now, those after them once they complete. A step waiting for a
// job outside the workflow that ended without completing stays as it is, with the steps after
// it: retry that job first. It returns the steps it changed.
func (c *Client) RetryWorkflow(ctx context.Context, id string) ([]*JobRow, error) {
	if !store.Storable(id) {
		return nil, fmt.Errorf("rota: retry workflow %q: %w", id, store.ErrNotFound)
	}
	rows, err := c.store.RetryWorkflow(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("rota: retry workflow %s: %w", id, plainly(err))
	}
	return rows, nil
}

// WorkflowStatus sums up a workflow's counts in one word: "running" while any step has not
// ended, then "completed" when every step completed, "failed" when one was discarded or expired,
// else "cancelled".
func WorkflowStatus(counts map[State]int64) string {
	var final, total int64
	for s, n := range counts {
		total += n
		if s.Final() {
			final += n
		}
	}
	switch {
	case final < total:
		return "running"
	case counts[StateCompleted] == total:
		return "completed"
	case counts[StateDiscarded] > 0 || counts[StateExpired] > 0:
		return "failed"
	}
	return "cancelled"
}

// Dependencies returns the jobs this job waited for, in the order they were given, read once
// per attempt: they have ended, and StepResult asks again for every step it decodes. One deleted
// or pruned since it ended is left out, not an error: a fan-in that waited past the retention
// of its first steps still reads the rest. On a job built by hand (package rotatest) it returns
// none.
func (j *Job[T]) Dependencies(ctx context.Context) ([]*JobRow, error) {
	if j.exec == nil || j.JobRow == nil {
		return nil, nil
	}
	if j.deps != nil {
		return j.deps, nil
	}
	s := j.exec.queue.node.client.store
	listed, err := listDependencies(ctx, s, j.JobRow)
	if err != nil {
		return nil, fmt.Errorf("rota: dependencies of job %d: %w", j.ID, err)
	}
	out := make([]*JobRow, 0, len(j.DependsOn))
	for _, id := range j.DependsOn {
		row := listed[id]
		if row == nil {
			if row, err = s.Get(ctx, id); errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("rota: dependency %d of job %d: %w", id, j.ID, err)
			}
		}
		out = append(out, row)
	}
	j.deps = out
	return out, nil
}

// A job of a workflow reads the steps it waited for (Dependencies) a page of the workflow at a
// time, rather than one store call each, when they are at least dependenciesListed and the
// workflow has at most dependenciesSpan times as many steps: a fan-in that waited for ten thousand
// steps reads them in ten calls, not ten thousand, and a step that waited for two of a large
// workflow's steps does not read the whole workflow.
const (
	dependenciesListed = 16
	dependenciesSpan   = 4
	dependenciesPage   = 1000
)

// listDependencies returns, by id, those of the jobs row waited for that a listing of its
// workflow finds, or none when reading them one by one costs less (see dependenciesListed).
// A dependency it leaves out (deleted, or of another workflow) is the caller's to read.
func listDependencies(ctx context.Context, s store.Store, row *JobRow) (map[int64]*JobRow, error) {
	if row.Workflow == "" || len(row.DependsOn) < dependenciesListed {
		return nil, nil
	}
	stats, err := s.Workflows(ctx, store.WorkflowListParams{ID: row.Workflow, Limit: 1})
	if err != nil || len(stats) == 0 {
		return nil, err
	}
	var steps int64
	for _, n := range stats[0].Counts {
		steps += n
	}
	if steps > int64(dependenciesSpan*len(row.DependsOn)) {
		return nil, nil
	}
	want := make(map[int64]bool, len(row.DependsOn))
	for _, id := range row.DependsOn {
		want[id] = true
	}
	out := make(map[int64]*JobRow, len(row.DependsOn))
	for after := int64(0); ; {
		page, err := s.List(ctx, store.ListParams{Workflow: row.Workflow, AfterID: after, Limit: dependenciesPage})
		if err != nil {
			return nil, err
		}
		for _, r := range page {
			if want[r.ID] {
				out[r.ID] = r
			}
		}
		if len(page) < dependenciesPage || len(out) == len(want) {
			return out, nil
		}
		after = page[len(page)-1].ID
	}
}

// StepResult decodes into v the result of the step named step that this job waited for.
func (j *Job[T]) StepResult(ctx context.Context, step string, v any) error {
	deps, err := j.Dependencies(ctx)
	if err != nil {
		return err
	}
	for _, d := range deps {
		if d.Step != step {
			continue
		}
		if len(d.Result) == 0 {
			return fmt.Errorf("rota: step %q (job %d) left no result", step, d.ID)
		}
		if err := json.Unmarshal(d.Result, v); err != nil {
			return fmt.Errorf("rota: decode result of step %q (job %d): %w", step, d.ID, err)
		}
		return nil
	}
	return fmt.Errorf("rota: job %d did not wait for a step named %q, or it was deleted or pruned since", j.JobRow.ID, step)
}
