package rota

import (
	"context"
	"fmt"

	"github.com/rotahq/rota/store"
)

// Batch is a set of jobs and a callback job that runs once, when every one of them has ended,
// however each ended. The callback reads how they ended with Job.BatchCounts. More jobs may be
// added while the batch is open, that is until its callback has been released (AddToBatch).
//
// A batch is a workflow whose last step waits for all the others and ignores their failures:
// it is listed, shown, cancelled and retried as one.
type Batch struct {
	callback     Args
	callbackOpts *InsertOpts
	jobs         []InsertManyParams
}

// BatchCallbackStep is the step name of a batch's callback; its jobs are steps "job-1",
// "job-2", … by their places among the callback's dependencies, in the order they were added
// (a job that was a duplicate of an earlier one is that one).
const BatchCallbackStep = "callback"

// NewBatch starts a batch whose callback runs callback with opts (nil for the defaults).
func NewBatch(callback Args, opts *InsertOpts) *Batch {
	return &Batch{callback: callback, callbackOpts: opts}
}

// Add adds a job to the batch.
func (b *Batch) Add(args Args, opts *InsertOpts) *Batch {
	b.jobs = append(b.jobs, InsertManyParams{Args: args, Opts: opts})
	return b
}

// BatchResult is an inserted batch: its id (a workflow id), its callback and its jobs.
type BatchResult struct {
	ID       string
	Callback *JobRow
	Jobs     []InsertResult
}

// InsertBatch inserts the batch's jobs and its callback in one transaction. A batch of no jobs
// is refused: its callback would have nothing to wait for.
func (c *Client) InsertBatch(ctx context.Context, b *Batch) (*BatchResult, error) {
	if len(b.jobs) == 0 {
		return nil, fmt.Errorf("rota: insert batch: %w: a batch needs at least one job", ErrInvalid)
	}
	id := c.newWorkflowID()
	params, err := c.manyParams(b.jobs)
	if err != nil {
		return nil, fmt.Errorf("rota: insert batch: %w", err)
	}
	cb, err := c.params(b.callback, b.callbackOpts)
	if err != nil {
		return nil, fmt.Errorf("rota: insert batch: callback: %w", err)
	}
	if err := c.checkBusy(ctx, append(b.jobs[:len(b.jobs):len(b.jobs)], InsertManyParams{Args: b.callback, Opts: b.callbackOpts})); err != nil {
		return nil, err
	}
	// A step is named by its place among the callback's dependencies, as AddToBatch's jobs are
	// named by the store, so that theirs come after. A job with the unique key of an earlier job
	// of the batch (not superseding it) is that job's duplicate: it takes no place of its own and
	// is named as that one.
	places, keyPlace := 0, map[string]int{}
	for i := range params {
		p := &params[i]
		n, dup := keyPlace[p.UniqueKey]
		if p.UniqueKey == "" || !dup || p.Supersede {
			places++
			n = places
			if p.UniqueKey != "" {
				keyPlace[p.UniqueKey] = n
			}
		}
		p.Workflow, p.Step = id, fmt.Sprintf("job-%d", n)
		cb.DependsOnIndex = append(cb.DependsOnIndex, i)
	}
	cb.Workflow, cb.Step, cb.IgnoreFailedDeps = id, BatchCallbackStep, true
	res, err := c.insertParams(ctx, append(params, cb))
	if err != nil {
		return nil, fmt.Errorf("rota: insert batch: %w", plainly(err))
	}
	return &BatchResult{ID: id, Callback: res[len(res)-1].Job, Jobs: res[:len(res)-1]}, nil
}

// AddToBatch adds jobs to the open batch whose callback is job callbackID, in one transaction:
// the callback waits for them too. Once the callback has been released the batch is closed, and
// adding fails with an error wrapping store.ErrNotPending, inserting nothing.
func (c *Client) AddToBatch(ctx context.Context, callbackID int64, jobs ...InsertManyParams) ([]InsertResult, error) {
	cb, err := c.store.Get(ctx, callbackID)
	if err != nil {
		return nil, fmt.Errorf("rota: add to batch: callback job %d: %w", callbackID, plainly(err))
	}
	if cb.Step != BatchCallbackStep || cb.Workflow == "" {
		return nil, fmt.Errorf("rota: add to batch: %w: job %d is not a batch's callback", ErrInvalid, callbackID)
	}
	params, err := c.manyParams(jobs)
	if err != nil {
		return nil, fmt.Errorf("rota: add to batch: %w", err)
	}
	if err := c.checkBusy(ctx, jobs); err != nil {
		return nil, err
	}
	// The store names them by their places in the callback's dependencies, under the lock that
	// adds them there: calls adding to one batch at once would name theirs alike from one read.
	for i := range params {
		params[i].Workflow, params[i].Step, params[i].NumberStep = cb.Workflow, "job-", true
		params[i].DependencyOf = callbackID
	}
	res, err := c.insertParams(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("rota: add to batch %s: %w", cb.Workflow, plainly(err))
	}
	return res, nil
}

// BatchCounts is how the jobs of a batch ended.
type BatchCounts struct {
	Completed, Discarded, Cancelled, Expired int64
}

// Failed is how many did not complete.
func (b BatchCounts) Failed() int64 { return b.Discarded + b.Cancelled + b.Expired }

// BatchCounts counts how the jobs of this job's batch ended, for its callback: one read of the
// batch's counts, however many jobs it has. On a job built by hand it counts none.
func (j *Job[T]) BatchCounts(ctx context.Context) (BatchCounts, error) {
	if j.exec == nil || j.JobRow == nil || j.Workflow == "" {
		return BatchCounts{}, nil
	}
	stats, err := j.exec.queue.node.client.store.Workflows(ctx, store.WorkflowListParams{ID: j.Workflow})
	if err == nil && len(stats) == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return BatchCounts{}, fmt.Errorf("rota: counts of batch %s: %w", j.Workflow, err)
	}
	// The callback itself is running: the final counts are its jobs'.
	c := stats[0].Counts
	return BatchCounts{Completed: c[store.StateCompleted], Discarded: c[store.StateDiscarded],
		Cancelled: c[store.StateCancelled], Expired: c[store.StateExpired]}, nil
}
