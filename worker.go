package rota

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rotahq/rota/internal/backoff"
)

// Worker runs jobs of one kind. Work returns nil on success, an error to retry with backoff, or
// one of Snooze, Cancel and Superseded to end the attempt another way. ctx is cancelled when the
// job times out, when a user cancels it and when the node stops hard; long jobs check it at their
// checkpoints.
type Worker[T Args] interface {
	Work(ctx context.Context, job *Job[T]) error
}

// Timeouter is implemented by workers whose jobs each carry their own time limit (a backup of a
// large mailbox, a program run with a timeout in its args). A positive return overrides the kind's
// Timeout for that job; zero keeps it; negative means no timeout.
type Timeouter[T Args] interface {
	Timeout(job *Job[T]) time.Duration
}

// WorkFunc adapts a function to a Worker.
type WorkFunc[T Args] func(ctx context.Context, job *Job[T]) error

// Work calls f.
func (f WorkFunc[T]) Work(ctx context.Context, job *Job[T]) error { return f(ctx, job) }

// Defaults for WorkerOptions.
const (
	// JobTimeoutDefault bounds one attempt. Jobs that legitimately run longer set their own.
	JobTimeoutDefault = time.Minute
	// MaxAttemptsDefault gives about three weeks of retries with the default backoff.
	MaxAttemptsDefault = 25
)

// WorkerOptions tune how one kind runs. Zero fields take the defaults.
type WorkerOptions struct {
	// Timeout bounds one attempt: the context is cancelled when it passes. Defaults to
	// JobTimeoutDefault; negative means no timeout.
	Timeout time.Duration
	// BackoffBase and BackoffMax shape the retry delays: BackoffBase·2^(attempt-1), capped at
	// BackoffMax, jittered into its upper half. Default to 1 s and 24 h.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// Singleton, when set, names a lease this node must hold before it claims jobs of this kind:
	// exactly one node fleet-wide runs the kind; the others wait and take over when it goes.
	Singleton string
}

// Workers is the set of kinds a node can run. Register kinds with AddWorker before the node starts.
type Workers struct {
	kinds map[string]*registration
}

// registration is one kind's worker with its args type erased, so the node can run any kind.
type registration struct {
	backoff   backoff.Policy
	singleton string
	// spanName names the trace span of an attempt: "work KIND".
	spanName string
	// bind decodes a claimed job's args, once, for the runner that runs it: it returns the
	// attempt's time limit (the worker's Timeouter, else the kind's Timeout) and the handler
	// call. Args that do not decode are a *badArgsError.
	bind func(row *JobRow, exec *execution) (timeout time.Duration, work func(context.Context) error, err error)
}

// NewWorkers returns an empty registry.
func NewWorkers() *Workers { return &Workers{kinds: map[string]*registration{}} }

// AddWorker registers w for the kind of T. T must be a type whose zero value answers Kind (a struct,
// not a pointer). Registering a kind twice panics: it is a programming error found at start-up.
func AddWorker[T Args](ws *Workers, w Worker[T], opts *WorkerOptions) {
	var zero T
	kind := zero.Kind()
	if err := validName("kind", kind); err != nil {
		panic(fmt.Sprintf("rota: AddWorker: %v", err))
	}
	if _, dup := ws.kinds[kind]; dup {
		panic(fmt.Sprintf("rota: AddWorker: kind %q registered twice", kind))
	}
	if opts == nil {
		opts = &WorkerOptions{}
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = JobTimeoutDefault
	}
	tw, _ := w.(Timeouter[T])
	ws.kinds[kind] = &registration{
		backoff:   backoff.Policy{Base: opts.BackoffBase, Max: opts.BackoffMax},
		singleton: opts.Singleton,
		spanName:  "work " + kind,
		bind: func(row *JobRow, exec *execution) (time.Duration, func(context.Context) error, error) {
			job := &Job[T]{JobRow: row, exec: exec}
			if err := json.Unmarshal(row.Args, &job.Args); err != nil {
				return 0, nil, &badArgsError{err: err}
			}
			limit := timeout
			if tw != nil {
				if d := tw.Timeout(job); d != 0 {
					limit = d
				}
			}
			return limit, func(ctx context.Context) error { return w.Work(ctx, job) }, nil
		},
	}
}

// Kinds lists the registered kinds.
func (ws *Workers) Kinds() []string {
	kinds := make([]string, 0, len(ws.kinds))
	for k := range ws.kinds {
		kinds = append(kinds, k)
	}
	return kinds
}

// badArgsError marks args that cannot be decoded into the worker's type: retrying cannot help, so
// the job is discarded with the reason, where a user can fix and retry it.
type badArgsError struct{ err error }

func (e *badArgsError) Error() string { return "decode args: " + e.err.Error() }
func (e *badArgsError) Unwrap() error { return e.err }
