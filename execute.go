package rota

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/trace"

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
	ctx     context.Context
	// cancel ends ctx; while the attempt runs, cancel it through Node.interrupt, which also
	// arms the grace its handler has to return.
	cancel context.CancelCauseFunc
	// ended is set once, by whoever ends the attempt: the runner when the handler returns, or
	// abandon when the handler outlived its grace. The other one then leaves the job alone.
	ended atomic.Bool
	// slotted is set while the attempt holds one of its queue's slots (queue.takeSlot).
	slotted atomic.Bool

	mu     sync.Mutex
	result []byte
	// span is the attempt's trace span, from the runner's start on it; nil before.
	span  trace.Span
	grace clockwork.Timer // armed by the first interrupt, until the attempt ends
}

// freeSlot gives back the attempt's slot, once, if it holds one.
func (e *execution) freeSlot() {
	if e.slotted.CompareAndSwap(true, false) {
		e.queue.freeSlot()
	}
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

// errGoexit ends an attempt whose handler called runtime.Goexit (t.FailNow in a test, say),
// which no recover sees.
var errGoexit = errors.New("handler called runtime.Goexit instead of returning")

// start hands a claimed job to an idle runner, or to a new one when none is idle.
//
// Runners are goroutines that outlive their jobs: a job costs no goroutine of its own, and a
// runner's stack, once grown by a handler, stays grown for the next one. A runner whose handler
// was abandoned never comes back (it may never return), so the pool does not count on it.
func (n *Node) start(q *queue, row *JobRow) {
	ctx, cancel := context.WithCancelCause(n.workCtx)
	reg := n.cfg.Workers.kinds[row.Kind]
	now := n.clock.Now()
	e := &execution{row: row, queue: q, reg: reg, start: now, ctx: ctx, cancel: cancel}
	// Registered before its start is told, so whoever saw job.started can cancel it; emitted
	// before a runner has the job, so its outcome's event always comes after.
	n.mu.Lock()
	earlier := n.running[row.ID]
	n.running[row.ID] = e
	n.mu.Unlock()
	n.events.emit(Event{Type: EventJobStarted, Job: row, Latency: startLatency(row, now), At: now})
	n.jobs.Add(1)
	if n.singletonLost(row.Kind) {
		// Claimed while the node held the kind's singleton lease, which it lost while the claim
		// travelled: handBack ran before this job was in the running set. It goes back as
		// handBack sends the others, its context ended before a runner has it, so its handler
		// never starts. Checked after the job entered the set, so that a loss after the check
		// finds it there.
		n.interrupt(e, errSingletonLost)
	}
	select {
	case n.idle <- e:
	default:
		go n.runner(e)
	}
	if earlier != nil {
		// An earlier attempt of the job still runs here: its lease ran out (the node lost the
		// store for longer than a lease), the job was rescued, and this claim took it again.
		// Its outcome would be refused for its fence; it is ended now, and its grace keeps it
		// from holding a stop (nothing else reaches it once this attempt took its entry).
		n.interrupt(earlier, errLeaseLost)
	}
}

// runner runs e, then whatever start hands it, until the node has stopped.
func (n *Node) runner(e *execution) {
	for {
		if !n.execute(e) {
			return // e was abandoned: this goroutine is no longer one of the pool's
		}
		select {
		case e = <-n.idle:
		case <-n.runnersDone:
			return
		}
	}
}

// execute runs the handler of e in the calling goroutine and ends the attempt, unless it was
// abandoned meanwhile; it reports whether it ended it.
func (n *Node) execute(e *execution) bool {
	// A job claimed ahead of a free slot waits for one here; one whose context ends first
	// (shutdown, cancel) ends without its handler, as a handler that returned at once would.
	slotted := e.queue.takeSlot(e.ctx)
	e.slotted.Store(slotted)
	// The attempt's span covers decoding too, so bad args show in traces; the handler's context
	// carries it; end, whoever calls it, ends it.
	ctx, span := n.startAttempt(e.ctx, e)
	e.mu.Lock()
	e.span = span
	e.mu.Unlock()
	var work func(context.Context) error
	// Decoding runs user code too (UnmarshalJSON, a Timeouter), so it is protected like the handler.
	err := protect(func() (err error) {
		e.timeout, work, err = e.reg.bind(e.row, e)
		return err
	})
	if e.ended.Load() {
		// Abandoned while it waited or decoded (a stop that ran out of time): the job is
		// handed back already, its handler must not start now.
		span.End()
		e.freeSlot()
		return false
	}
	if err == nil && (!slotted || e.ctx.Err() != nil) {
		// Its context ended before its handler began (a stop, a cancel, a lease lost while it
		// was claimed): the handler does not start, as if it had returned at once.
		err = context.Cause(e.ctx)
	} else if err == nil {
		if e.timeout > 0 {
			var disarm func() bool
			ctx, disarm = clockctx.Arm(ctx, func(cause error) { n.interrupt(e, cause) }, n.clock, e.timeout)
			defer disarm()
		}
		returned := false
		defer func() {
			if !returned {
				// runtime.Goexit: this goroutine ends after its deferred calls, and the
				// attempt with it; a new runner takes the next job.
				n.finish(ctx, e, errGoexit)
			}
		}()
		err = protect(func() error { return work(ctx) })
		returned = true
	}
	return n.finish(ctx, e, err)
}

// finish ends e's attempt with err, unless it was abandoned meanwhile; it reports whether it
// ended it.
func (n *Node) finish(ctx context.Context, e *execution, err error) bool {
	if !e.ended.CompareAndSwap(false, true) {
		return false
	}
	e.mu.Lock()
	if e.grace != nil {
		e.grace.Stop()
	}
	e.mu.Unlock()
	n.end(ctx, e, err)
	return true
}

// protect calls f, turning a panic into an error with its stack.
func protect(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: r, stack: string(debug.Stack())}
		}
	}()
	return f()
}

// interrupt cancels e's context with cause (a timeout, a cancel, a hand-back) and gives its
// handler TimeoutGrace to return before the attempt is ended without it. Every cancel of a
// running job comes through here, so that nothing has to wait on each job's context for it
// (context.AfterFunc was an allocation or three per job, which a drain's garbage collector
// paid for). The context's parent, the node's work context, is cancelled only once a stop has
// run out of time, and that stop abandons what is left after the same grace itself.
func (n *Node) interrupt(e *execution, cause error) {
	e.cancel(cause)
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.ended.Load() && e.grace == nil {
		e.grace = n.clock.AfterFunc(n.cfg.TimeoutGrace, func() { n.abandon(e.ctx, e) })
	}
}

// abandon ends the attempt of a handler that ignores its cancelled context: its goroutine is left
// behind, but its slot and its job are freed.
func (n *Node) abandon(ctx context.Context, e *execution) {
	if !e.ended.CompareAndSwap(false, true) {
		return
	}
	n.events.emit(Event{Type: EventJobAbandoned, Job: e.row, Error: fmt.Sprint(context.Cause(ctx)),
		Duration: n.clock.Since(e.start), At: n.clock.Now()})
	n.end(ctx, e, errAbandoned)
}

// abandonAll abandons every attempt still running, for a stop that waited long enough.
func (n *Node) abandonAll() {
	n.mu.Lock()
	left := make([]*execution, 0, len(n.running))
	for _, e := range n.running {
		left = append(left, e)
	}
	n.mu.Unlock()
	for _, e := range left {
		n.abandon(e.ctx, e)
	}
}

// end records the outcome of an attempt and frees its slot.
func (n *Node) end(ctx context.Context, e *execution, err error) {
	// The handler's error is user code too: its Error (a typed nil *T, say), Unwrap, As or
	// ErrorDetails may panic, which here would end the node, not the attempt.
	var outcome store.Outcome
	if perr := protect(func() error { outcome = n.outcome(ctx, e, err); return nil }); perr != nil {
		outcome = n.failed(store.Outcome{ID: e.row.ID, Fence: e.row.Fence}, e, perr, n.clock.Now())
	}
	e.mu.Lock()
	span := e.span
	e.mu.Unlock()
	if span != nil {
		endAttempt(span, outcome)
	}
	// Out of the running set before the outcome is queued: once it is written, the job may be
	// claimed again by this node, and that attempt's entry must not be the one removed here.
	n.mu.Lock()
	if n.running[e.row.ID] == e {
		delete(n.running, e.row.ID)
	}
	n.mu.Unlock()
	// The slot is free before the outcome is queued, so that the outcome's event, which the
	// completer may emit at once, never comes before it: whoever reacts to a job's end (a wake-up
	// for work inserted after it) finds its slot free.
	e.freeSlot()
	e.queue.released()
	n.completer.Add(outcome, func(applied bool) { n.recorded(e, outcome, applied) })
	e.cancel(nil)
	n.jobs.Done()
}

// outcome turns what the handler returned into the job's next state.
func (n *Node) outcome(ctx context.Context, e *execution, err error) store.Outcome {
	now := n.clock.Now()
	row := e.row
	o := store.Outcome{ID: row.ID, Fence: row.Fence}
	if err == nil {
		result := e.getResult()
		if len(result) > n.cfg.MaxResultBytes {
			err = fmt.Errorf("result is %d bytes, over the limit of %d bytes", len(result), n.cfg.MaxResultBytes)
			return n.failed(o, e, err, now)
		}
		o.State, o.Result = StateCompleted, result
		return o
	}
	// Declared past the success, which nearly every job is: errors.As takes their addresses, so
	// each is an allocation wherever it is declared.
	cause := context.Cause(ctx)
	var (
		snooze     *snoozeError
		cancelled  *cancelError
		superseded *supersededError
		badArgs    *badArgsError
	)
	switch {
	case errors.Is(cause, errCancelledByUser) && !errors.As(err, &cancelled) && !errors.As(err, &superseded):
		// A user's cancel wins over a snooze or an error that would run the job again: the
		// store would end it cancelled anyway (CancelRequestedState), and the event must say so.
		o.State, o.Error = StateCancelled, attemptError(row, now, fmt.Errorf("cancelled by user: %w", err))
	case errors.As(err, &snooze):
		o.State, o.RunAt, o.RefundAttempt = StateScheduled, now.Add(snooze.d), true
	case errors.As(err, &superseded):
		// Logged from its job.cancelled event, whose error says it was superseded and why.
		o.State, o.Error = StateCancelled, attemptError(row, now, err)
	case errors.As(err, &cancelled):
		o.State, o.Error = StateCancelled, attemptError(row, now, err)
	case errors.Is(cause, errShutdown), errors.Is(cause, errSingletonLost), errors.Is(cause, errLeaseLost):
		o.State, o.RefundAttempt = StateAvailable, true
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
	var (
		p *panicError
		d Detailer
	)
	switch {
	case errors.As(err, &p):
		ae.Trace = p.stack
	case errors.As(err, &d):
		ae.Trace = d.ErrorDetails()
	}
	return ae
}

// Detailer is an error that carries more than its message: a failed program's output, a
// response body. The details are kept with the attempt's error (AttemptError.Trace, shown on a
// job's page under the error), where a panic's stack goes.
type Detailer interface {
	error
	ErrorDetails() string
}
