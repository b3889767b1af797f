package rota

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/rotahq/rota/internal/clockctx"
	"github.com/rotahq/rota/store"
)

// execution is one attempt of one job on this node.
type execution struct {
	row     *JobRow
	queue   *queue
	reg     *registration
	timeout time.Duration
	start   time.Time
	cancel  context.CancelCauseFunc

	mu     sync.Mutex
	result []byte
}

func (e *execution) setResult(b []byte) {
	e.mu.Lock()
	e.result = b
	e.mu.Unlock()
}

func (e *execution) getResult() []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.result
}

// panicError is a handler's panic turned into a failed attempt, with the stack that caused it.
type panicError struct {
	value any
	stack string
}

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }

var errAbandoned = errors.New("handler did not return after its context was cancelled")

// start runs a claimed job in its own goroutine.
func (n *Node) start(q *queue, row *JobRow) {
	ctx, cancel := context.WithCancelCause(n.workCtx)
	reg := n.cfg.Workers.kinds[row.Kind]
	e := &execution{row: row, queue: q, reg: reg, timeout: reg.timeoutFor(row), start: n.clock.Now(), cancel: cancel}
	n.mu.Lock()
	n.running[row.ID] = e
	n.mu.Unlock()
	n.jobs.Add(1)
	go n.execute(ctx, e)
}

func (n *Node) execute(ctx context.Context, e *execution) {
	defer n.jobs.Done()
	defer e.cancel(nil)
	if e.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = clockctx.WithTimeout(ctx, n.clock, e.timeout)
		defer cancel()
	}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- &panicError{value: r, stack: string(debug.Stack())}
			}
		}()
		done <- e.reg.run(ctx, e.row, e)
	}()

	err := n.await(ctx, e, done)
	outcome := n.outcome(ctx, e, err)
	n.completer.Add(outcome, func(applied bool) { n.recorded(e, outcome, applied) })

	n.mu.Lock()
	delete(n.running, e.row.ID)
	n.mu.Unlock()
	e.queue.released()
}

// await waits for the handler, or gives up on one that ignores its cancelled context for longer
// than the grace period: its goroutine is left behind, but its slot and its job are freed.
func (n *Node) await(ctx context.Context, e *execution, done <-chan error) error {
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	grace := n.clock.NewTimer(n.cfg.TimeoutGrace)
	defer grace.Stop()
	select {
	case err := <-done:
		return err
	case <-grace.Chan():
	case <-n.forceEnd:
	}
	n.logger.Error("rota: abandoning a handler that ignores its cancelled context", "job", e.row.ID, "kind", e.row.Kind,
		"cause", context.Cause(ctx), "grace", n.cfg.TimeoutGrace)
	return errAbandoned
}

// outcome turns what the handler returned into the job's next state.
func (n *Node) outcome(ctx context.Context, e *execution, err error) store.Outcome {
	now := n.clock.Now()
	row := e.row
	o := store.Outcome{ID: row.ID, Fence: row.Fence}
	cause := context.Cause(ctx)
	var (
		snooze     *snoozeError
		cancelled  *cancelError
		superseded *supersededError
		badArgs    *badArgsError
	)
	switch {
	case err == nil:
		result := e.getResult()
		if len(result) > n.cfg.MaxResultBytes {
			err = fmt.Errorf("result is %d bytes, over the limit of %d bytes", len(result), n.cfg.MaxResultBytes)
			return n.failed(o, e, err, now)
		}
		o.State, o.Result = StateCompleted, result
	case errors.As(err, &snooze):
		o.State, o.RunAt, o.RefundAttempt = StateScheduled, now.Add(snooze.d), true
	case errors.As(err, &superseded):
		n.logger.Warn("rota: job superseded", "job", row.ID, "kind", row.Kind, "reason", superseded.reason)
		o.State, o.Error = StateCancelled, attemptError(row, now, err)
	case errors.As(err, &cancelled):
		o.State, o.Error = StateCancelled, attemptError(row, now, err)
	case errors.Is(cause, errShutdown):
		o.State, o.RefundAttempt = StateAvailable, true
	case errors.Is(cause, errCancelledByUser):
		o.State, o.Error = StateCancelled, attemptError(row, now, fmt.Errorf("cancelled by user: %w", err))
	case errors.As(err, &badArgs):
		o.State, o.Error = StateDiscarded, attemptError(row, now, err)
	default:
		if errors.Is(cause, context.DeadlineExceeded) {
			err = fmt.Errorf("timed out after %v: %w", e.timeout, err)
		}
		return n.failed(o, e, err, now)
	}
	return o
}

// failed ends an attempt with an error: retry later if attempts remain, else discard.
func (n *Node) failed(o store.Outcome, e *execution, err error, now time.Time) store.Outcome {
	o.Error = attemptError(e.row, now, err)
	if e.row.Attempt >= e.row.MaxAttempts {
		o.State = StateDiscarded
		return o
	}
	o.State, o.RunAt = StateRetryable, now.Add(e.reg.backoff.Delay(e.row.Attempt))
	return o
}

func attemptError(row *JobRow, now time.Time, err error) *store.AttemptError {
	ae := &store.AttemptError{Attempt: row.Attempt, At: now, Error: err.Error()}
	var p *panicError
	if errors.As(err, &p) {
		ae.Trace = p.stack
	}
	return ae
}
