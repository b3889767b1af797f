package rota

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// A job that times out has a context whose Err is context.DeadlineExceeded, as the
// context.Context contract asks of one whose deadline passed: handlers and libraries tell a
// timeout from a cancel by it (net/http, database drivers, gRPC status codes, retry helpers),
// and so do the contexts a handler derives from it.
func TestTimedOutContextErrIsDeadlineExceeded(t *testing.T) {
	started := make(chan struct{})
	seen := make(chan error, 1)
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error {
		child, cancel := context.WithCancel(ctx) // as a handler's own calls derive theirs
		defer cancel()
		close(started)
		<-child.Done()
		if !errors.Is(child.Err(), ctx.Err()) {
			seen <- fmt.Errorf("a derived context says %v where the job's says %v", child.Err(), ctx.Err())
			return ctx.Err()
		}
		seen <- ctx.Err()
		return ctx.Err()
	}, nil)
	job := b.insert(t, testArgs{}, nil)
	recv(t, started)
	b.timers(t, baseTimers(b.node)+1) // the job's timeout
	b.clock.Advance(7 * time.Second)
	err := recv(t, seen)
	b.event(t, EventJobFailed)
	row := b.get(t, job.ID)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after the job's timeout ctx.Err() = %v, want context.DeadlineExceeded; recorded error %q", err, row.Errors[0].Error)
	}
}
