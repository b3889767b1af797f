// Package clockctx makes contexts whose deadlines follow an injected clock, so timeouts run in
// virtual time in tests. The cause of a context that timed out is context.DeadlineExceeded;
// other causes (a parent's, a cancel's) pass through context.Cause unchanged.
package clockctx

import (
	"context"
	"errors"
	"time"

	"github.com/jonboulle/clockwork"
)

// WithDeadline returns a context cancelled, with cause context.DeadlineExceeded, when clock
// reaches deadline.
func WithDeadline(parent context.Context, clock clockwork.Clock, deadline time.Time) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	armed, stop := arm(ctx, cancel, clock, deadline)
	return armed, func() {
		stop()
		cancel(context.Canceled)
	}
}

// Arm gives ctx a deadline at clock.Now() + d without making a context of its own: when the
// clock reaches it, cancel, which must be ctx's own CancelCauseFunc, is called with
// context.DeadlineExceeded. A node arms one per job on the context it already made for
// cancelling the job, where WithTimeout would add a second context, with a done channel of its
// own, to every job. stop disarms the timer.
func Arm(ctx context.Context, cancel context.CancelCauseFunc, clock clockwork.Clock, d time.Duration) (_ context.Context, stop func() bool) {
	return arm(ctx, cancel, clock, clock.Now().Add(d))
}

func arm(ctx context.Context, cancel context.CancelCauseFunc, clock clockwork.Clock, deadline time.Time) (context.Context, func() bool) {
	timer := clock.AfterFunc(clock.Until(deadline), func() { cancel(context.DeadlineExceeded) })
	c := &deadlineCtx{Context: ctx, deadline: deadline, done: make(chan struct{})}
	context.AfterFunc(ctx, func() { close(c.done) })
	return c, timer.Stop
}

// WithTimeout is WithDeadline at clock.Now() + d.
func WithTimeout(parent context.Context, clock clockwork.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	return WithDeadline(parent, clock, clock.Now().Add(d))
}

// deadlineCtx reports the clock's deadline, so handlers can see how long they have, and
// context.DeadlineExceeded once it cancelled the context. The contexts derived from it report
// that too: its Done channel is its own (closed once the context it wraps is done), so that the
// context package does not hang them on the wrapped context, whose Err is Canceled, but on its
// AfterFunc, and takes their Err from its Err.
type deadlineCtx struct {
	context.Context
	deadline time.Time
	done     chan struct{}
}

func (c *deadlineCtx) Done() <-chan struct{} { return c.done }

// AfterFunc runs f once the context is done, as context.AfterFunc does.
func (c *deadlineCtx) AfterFunc(f func()) (stop func() bool) { return context.AfterFunc(c.Context, f) }

func (c *deadlineCtx) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Err is context.DeadlineExceeded once the deadline has cancelled the context, as the
// context.Context contract asks of a context whose deadline passed; otherwise the parent's.
func (c *deadlineCtx) Err() error {
	err := c.Context.Err()
	if err != nil && errors.Is(context.Cause(c.Context), context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return err
}
