// Package rota runs durable background jobs: now, later, or on a schedule, with retries, timeouts,
// cancellation and fenced leases, on an embedded SQLite file or a shared PostgreSQL or Redis.
//
// A program that produces jobs uses a Client; a program that runs them starts a Node with the
// Workers for the kinds it knows. Both speak to a store.Store, which holds every job's state.
//
//	type EmailArgs struct{ To string }
//	func (EmailArgs) Kind() string { return "email" }
//
//	workers := rota.NewWorkers()
//	rota.AddWorker(workers, rota.WorkFunc[EmailArgs](func(ctx context.Context, j *rota.Job[EmailArgs]) error {
//		return send(ctx, j.Args.To)
//	}), nil)
//	node, _ := rota.NewNode(rota.Config{Store: st, Workers: workers})
//	node.Start(ctx)
//	node.Client().Insert(ctx, EmailArgs{To: "a@example.com"}, nil)
package rota

import (
	"encoding/json"

	"github.com/rotahq/rota/store"
)

// JobRow is a job as stored, without typed args.
type JobRow = store.JobRow

// State is where a job is in its life; see store.State.
type State = store.State

// The states of a job, re-exported so users need not import store.
const (
	StateScheduled = store.StateScheduled
	StatePending   = store.StatePending
	StateAvailable = store.StateAvailable
	StateRunning   = store.StateRunning
	StateRetryable = store.StateRetryable
	StateCompleted = store.StateCompleted
	StateCancelled = store.StateCancelled
	StateDiscarded = store.StateDiscarded
	StateExpired   = store.StateExpired
)

// Args is the payload of a job. Its Kind names the worker that runs it, and it is stored as JSON.
type Args interface {
	Kind() string
}

// Job is a job handed to a worker, with its args decoded.
type Job[T Args] struct {
	*JobRow
	Args T

	exec *execution
	deps []*JobRow // what Dependencies read, kept for the attempt: the steps waited for have ended
}

// SetResult records v, encoded as JSON, as the job's result. Callers of Wait receive it. The last
// call wins; a result larger than MaxResultBytes fails the attempt. On a Job built by hand, in a
// test (package rotatest builds them), the result goes to the job's row: j.Result.
func (j *Job[T]) SetResult(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmtErr("encode result", err)
	}
	if j.exec == nil {
		if j.JobRow == nil {
			j.JobRow = &JobRow{}
		}
		j.Result = b
		return nil
	}
	j.exec.setResult(b)
	return nil
}

// RawArgs carries args that are already JSON, for producers that do not have the Go type: the CLI,
// the HTTP API, other languages.
type RawArgs struct {
	KindName string
	JSON     json.RawMessage
}

// Kind returns the kind the args are for.
func (r RawArgs) Kind() string { return r.KindName }

// MarshalJSON returns the args as they were given.
func (r RawArgs) MarshalJSON() ([]byte, error) {
	if len(r.JSON) == 0 {
		return []byte("{}"), nil
	}
	return r.JSON, nil
}
