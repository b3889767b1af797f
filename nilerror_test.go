package rota

import (
	"context"
	"runtime"
	"strings"
	"testing"
)

// nilPointerError is an error type whose Error, like most, reads its receiver.
type nilPointerError struct{ msg string }

func (e *nilPointerError) Error() string { return e.msg }

// A handler that returns a typed nil error (the classic Go mistake: a *T that is nil, in an
// error interface that is not) or any error whose Error panics must fail its attempt like a
// panic in the handler does, not panic the runner goroutine and so kill the whole node.
func TestErrorWhoseMessagePanicsFailsTheAttempt(t *testing.T) {
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error {
		var err *nilPointerError // nil: the handler meant "no error"
		return err
	}, nil)
	job := b.insert(t, testArgs{}, nil)
	b.event(t, EventJobFailed)
	row := b.get(t, job.ID)
	if row.State != StateRetryable || len(row.Errors) != 1 || !strings.Contains(row.Errors[0].Error, "panic") {
		t.Fatalf("state %s errors %+v, want a failed attempt recording the panic", row.State, row.Errors)
	}
}

// A handler that calls runtime.Goexit (t.FailNow from a handler, in a test) ends its goroutine
// past every recover: its attempt fails, saying so, and the node goes on running jobs.
func TestHandlerGoexitFailsTheAttempt(t *testing.T) {
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error {
		if j.Args.N == 0 {
			runtime.Goexit()
		}
		return nil
	}, nil)
	job := b.insert(t, testArgs{}, nil)
	b.event(t, EventJobFailed)
	row := b.get(t, job.ID)
	if row.State != StateRetryable || len(row.Errors) != 1 || !strings.Contains(row.Errors[0].Error, "runtime.Goexit") {
		t.Fatalf("state %s errors %+v, want a failed attempt naming runtime.Goexit", row.State, row.Errors)
	}
	b.insert(t, testArgs{N: 1}, nil)
	b.event(t, EventJobCompleted)
}
