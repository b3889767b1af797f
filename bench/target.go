package bench

import (
	"context"
	"errors"
	"time"
)

// Target is one job system under test, such as rota on SQLite or River on PostgreSQL.
type Target interface {
	// Name labels the target's rows in the results table.
	Name() string
	// Open returns an empty system for one workload; the workload closes it.
	Open(ctx context.Context) (Instance, error)
}

// Instance is one empty system, opened for one workload. Every job it handles is a no-op whose
// args carry a sequence number, so the workloads can tell jobs apart without reading ids.
type Instance interface {
	// Insert adds one job carrying seq and returns once the system says it is stored.
	Insert(ctx context.Context, seq int64) error
	// InsertBatch adds one job per seq in one call. A system without batch inserts returns
	// ErrNoBatch.
	InsertBatch(ctx context.Context, seqs []int64) error
	// Workers prepares, without starting, workers that run up to n jobs at once on the queue the
	// inserts go to.
	Workers(n int, h Hooks) (Runner, error)
	// Close releases the system and removes what it stored.
	Close() error
}

// Hooks are how an Instance reports progress to the workload. Both may be called from many
// goroutines at once and must be cheap.
type Hooks struct {
	// Started is called by the handler, first thing, with the job's sequence number.
	Started func(seq int64)
	// Completed is called once the system has recorded a job completed (from its completion
	// events where it has them), not merely when the handler returned.
	Completed func()
	// Retention, when set, is how long the system keeps completed jobs: a soak keeps its store
	// bounded by it. Zero keeps the system's default.
	Retention time.Duration
}

// Runner is a set of workers that can be started and stopped once.
type Runner interface {
	Start(ctx context.Context) error
	// Stop lets running jobs finish and releases the workers.
	Stop(ctx context.Context) error
}

// ErrNoBatch is returned by InsertBatch on systems that insert one job per call only.
var ErrNoBatch = errors.New("no batch insert")
