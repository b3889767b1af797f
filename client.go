package rota

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/trace"

	"github.com/rotahq/rota/store"
)

// ClientConfig tunes a Client. The zero value is ready to use.
type ClientConfig struct {
	// Clock defaults to the real clock; tests pass a fake one.
	Clock clockwork.Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// MaxArgsBytes caps the encoded args of one job. Defaults to MaxArgsBytesDefault.
	MaxArgsBytes int
	// WaitPollInterval is how often Wait looks at the job when the store cannot push its end, and
	// as a safety net when it can. Defaults to WaitPollIntervalDefault.
	WaitPollInterval time.Duration
	// TracerProvider makes the spans of inserts (see TraceMetadataKey). Defaults to the global
	// one, otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
}

// WaitPollIntervalDefault is short enough for a person at a terminal and cheap for the store: one
// indexed read per waiting caller.
const WaitPollIntervalDefault = 200 * time.Millisecond

// Client inserts jobs and manages them. It runs nothing; a Node does. Safe for concurrent use.
type Client struct {
	store        store.Store
	clock        clockwork.Clock
	logger       *slog.Logger
	maxArgsBytes int
	waitPoll     time.Duration
	tracer       tracer
	// onCancel lets the node that owns this client cancel a job it runs at once, instead of at its
	// next heartbeat.
	onCancel func(id int64)
}

// NewClient returns a Client on s. cfg may be nil.
func NewClient(s store.Store, cfg *ClientConfig) *Client {
	if cfg == nil {
		cfg = &ClientConfig{}
	}
	c := &Client{store: s, clock: cfg.Clock, logger: cfg.Logger, maxArgsBytes: cfg.MaxArgsBytes, waitPoll: cfg.WaitPollInterval,
		tracer: newTracer(cfg.TracerProvider)}
	if c.clock == nil {
		c.clock = clockwork.NewRealClock()
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.maxArgsBytes <= 0 {
		c.maxArgsBytes = MaxArgsBytesDefault
	}
	if c.waitPoll <= 0 {
		c.waitPoll = WaitPollIntervalDefault
	}
	return c
}

// Store returns the store the client works on.
func (c *Client) Store() store.Store { return c.store }

// Insert adds one job. It is durable when Insert returns (to the store's durability, see docs).
func (c *Client) Insert(ctx context.Context, args Args, opts *InsertOpts) (*InsertResult, error) {
	res, err := c.InsertMany(ctx, []InsertManyParams{{Args: args, Opts: opts}})
	if err != nil {
		return nil, err
	}
	return &res[0], nil
}

// InsertMany adds many jobs in one transaction: all or none. Thousands per call are fine.
func (c *Client) InsertMany(ctx context.Context, jobs []InsertManyParams) ([]InsertResult, error) {
	params, err := c.manyParams(jobs)
	if err != nil {
		return nil, err
	}
	if err := c.checkBusy(ctx, jobs); err != nil {
		return nil, err
	}
	res, err := c.insertParams(ctx, params)
	if err != nil {
		return nil, fmtErr("insert", err)
	}
	return res, nil
}

// insertParams inserts validated params in one store call, under one producer span: the jobs of
// one call share a trace.
func (c *Client) insertParams(ctx context.Context, params []store.InsertParams) ([]InsertResult, error) {
	ctx, span := c.startInsert(ctx, params)
	res, err := c.store.Insert(ctx, params)
	endInsert(span, res, err)
	return res, err
}

// InsertTx adds jobs inside the caller's transaction, so they exist if and only if it commits.
// Only SQL stores support it; tx is their transaction type (*sql.Tx for SQLite, pgx.Tx for
// PostgreSQL).
func (c *Client) InsertTx(ctx context.Context, tx any, jobs []InsertManyParams) ([]InsertResult, error) {
	ti, ok := c.store.(store.TxInserter)
	if !ok {
		return nil, fmt.Errorf("rota: insert in transaction: %T cannot join a caller's transaction", c.store)
	}
	params, err := c.manyParams(jobs)
	if err != nil {
		return nil, err
	}
	if err := c.checkBusy(ctx, jobs); err != nil {
		return nil, err
	}
	ctx, span := c.startInsert(ctx, params)
	res, err := ti.InsertTx(ctx, tx, params)
	endInsert(span, res, err)
	if err != nil {
		return nil, fmtErr("insert in transaction", err)
	}
	return res, nil
}

func (c *Client) manyParams(jobs []InsertManyParams) ([]store.InsertParams, error) {
	params := make([]store.InsertParams, len(jobs))
	for i, j := range jobs {
		p, err := c.params(j.Args, j.Opts)
		if err != nil {
			if len(jobs) > 1 {
				return nil, fmt.Errorf("rota: job %d of %d: %w", i+1, len(jobs), err)
			}
			return nil, fmt.Errorf("rota: %w", err)
		}
		params[i] = p
	}
	return params, nil
}

// checkBusy refuses best-effort inserts into queues that already have enough waiting, or that a
// fleet-wide limit on the queue or the job's kind lets start no job now: as many running as it
// allows, or its rate's starts used up. It is a check, not a lock: two producers racing may
// both get in, which best effort allows.
func (c *Client) checkBusy(ctx context.Context, jobs []InsertManyParams) error {
	waiting := map[string]int64{}
	type gate struct{ queue, kind string }
	closed := map[gate]*store.LimitUsage{}
	for _, j := range jobs {
		if j.Opts == nil || j.Opts.DropIfBusy <= 0 {
			continue
		}
		queue, kind := cmp.Or(j.Opts.Queue, QueueDefault), j.Args.Kind()
		n, ok := waiting[queue]
		if !ok {
			// The counts alone: what limits the queue is LimitUsage's, below.
			load, err := c.queueCounts(ctx, queue)
			if err != nil {
				return fmt.Errorf("rota: insert: %w", err)
			}
			n, waiting[queue] = load.Waiting, load.Waiting
		}
		if n >= int64(j.Opts.DropIfBusy) {
			return fmt.Errorf("rota: insert %s: %w: %d jobs wait in queue %q (limit %d); dropped as asked",
				kind, ErrBusy, n, queue, j.Opts.DropIfBusy)
		}
		g := gate{queue, kind}
		full, ok := closed[g]
		if !ok {
			usage, err := c.store.LimitUsage(ctx, queue, kind)
			if err != nil {
				return fmt.Errorf("rota: insert: %w", fmtErr("limit usage", err))
			}
			for i := range usage {
				if usage[i].Allowance() == 0 {
					full = &usage[i]
					break
				}
			}
			closed[g] = full
		}
		if full != nil {
			return fmt.Errorf("rota: insert %s: %w: %s; dropped as asked", kind, ErrBusy, describeFull(*full))
		}
	}
	return nil
}

// describeFull says why limit u lets no job start now.
func describeFull(u store.LimitUsage) string {
	what := fmt.Sprintf("the fleet-wide limit on %s %q", u.Scope, u.Name)
	if u.MaxRunning > 0 && u.Running >= u.MaxRunning {
		return fmt.Sprintf("%s runs %d jobs, its most", what, u.Running)
	}
	return fmt.Sprintf("%s started %d jobs in the last %v, its rate", what, u.Started, u.Period)
}

// Get returns one job, or an error wrapping store.ErrNotFound.
func (c *Client) Get(ctx context.Context, id int64) (*JobRow, error) {
	row, err := c.store.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("rota: get job %d: %w", id, err)
	}
	return row, nil
}

// ListParams filters List; see store.ListParams.
type ListParams = store.ListParams

// List returns one page of jobs. Pass the last id of a page as AfterID to get the next.
func (c *Client) List(ctx context.Context, p ListParams) ([]*JobRow, error) {
	for _, s := range p.States {
		if !s.Valid() {
			return nil, fmt.Errorf("rota: list: %w: unknown state %q", ErrInvalid, s)
		}
	}
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("rota: list: %w: %w", ErrInvalid, err)
	}
	rows, err := c.store.List(ctx, p)
	if err != nil {
		return nil, fmtErr("list", err)
	}
	return rows, nil
}

// Cancel stops a job. One that waits ends cancelled at once; a running one has its context
// cancelled by the node that runs it (at once on this process's node, within a heartbeat
// elsewhere) and then ends cancelled. A finished job is returned unchanged.
func (c *Client) Cancel(ctx context.Context, id int64) (*JobRow, error) {
	row, err := c.store.Cancel(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("rota: cancel job %d: %w", id, err)
	}
	if row.State == StateRunning && c.onCancel != nil {
		c.onCancel(id)
	}
	return row, nil
}

// Retry makes a finished (or waiting) job available now, with one more attempt if it had used all.
func (c *Client) Retry(ctx context.Context, id int64) (*JobRow, error) {
	row, err := c.store.Retry(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("rota: retry job %d: %w", id, plainly(err))
	}
	return row, nil
}

// Delete removes a job that is not running, with its args, result and errors, for data that must
// not be kept (a job carrying personal data, a secret pasted into args by mistake) or a job
// inserted in error. A running job gives an error wrapping store.ErrJobRunning: cancel it first.
// Finished jobs need no deleting; retention prunes them.
func (c *Client) Delete(ctx context.Context, id int64) error {
	if err := c.store.Delete(ctx, id); err != nil {
		return fmt.Errorf("rota: delete job %d: %w", id, plainly(err))
	}
	return nil
}

// QueueStats counts jobs per state in every queue, so producers can see load and skip optional
// work while workers are busy.
func (c *Client) QueueStats(ctx context.Context) ([]store.QueueStats, error) {
	st, err := c.store.QueueStats(ctx)
	if err != nil {
		return nil, fmtErr("queue stats", err)
	}
	return st, nil
}

// PauseQueue stops every node from claiming jobs of queue until ResumeQueue.
func (c *Client) PauseQueue(ctx context.Context, queue string) error {
	if err := validName("queue", queue); err != nil {
		return fmt.Errorf("rota: pause queue: %w", err)
	}
	if err := c.store.PauseQueue(ctx, queue); err != nil {
		return fmt.Errorf("rota: pause queue %q: %w", queue, err)
	}
	return nil
}

// ResumeQueue lets nodes claim from queue again.
func (c *Client) ResumeQueue(ctx context.Context, queue string) error {
	if err := validName("queue", queue); err != nil {
		return fmt.Errorf("rota: resume queue: %w", err)
	}
	if err := c.store.ResumeQueue(ctx, queue); err != nil {
		return fmt.Errorf("rota: resume queue %q: %w", queue, err)
	}
	return nil
}

// plainly is err as the caller should read it: a refusal the store explains with one of
// package store's errors is that error alone, since the caller already says which job and
// what was asked ("rota: retry job 33: job is running", not "…: sqlite: retry 33: job is
// running"). Other errors (a store that failed) keep the store's words, which say where.
func plainly(err error) error {
	for _, known := range []error{store.ErrJobRunning, store.ErrNotFound} {
		if errors.Is(err, known) {
			return known
		}
	}
	return err
}
