package clockctx

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

func TestTimesOutOnTheInjectedClock(t *testing.T) {
	clock := clockwork.NewFakeClock()
	ctx, cancel := WithTimeout(context.Background(), clock, time.Minute)
	defer cancel()
	if d, _ := ctx.Deadline(); !d.Equal(clock.Now().Add(time.Minute)) {
		t.Fatalf("deadline %v", d)
	}
	clock.Advance(59 * time.Second)
	if ctx.Err() != nil {
		t.Fatal("cancelled before its deadline")
	}
	clock.Advance(time.Second)
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		t.Fatalf("cause %v", context.Cause(ctx))
	}
}

func TestParentCausePassesThrough(t *testing.T) {
	errStop := errors.New("stop")
	parent, cancelParent := context.WithCancelCause(context.Background())
	ctx, cancel := WithTimeout(parent, clockwork.NewFakeClock(), time.Minute)
	defer cancel()
	cancelParent(errStop)
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), errStop) {
		t.Fatalf("cause %v, want the parent's", context.Cause(ctx))
	}
}

func TestArmCancelsWithDeadlineExceeded(t *testing.T) {
	clock := clockwork.NewFakeClock()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	armed, stop := Arm(ctx, cancel, clock, time.Minute)
	if d, _ := armed.Deadline(); !d.Equal(clock.Now().Add(time.Minute)) {
		t.Fatalf("deadline %v", d)
	}
	clock.Advance(time.Minute)
	<-armed.Done()
	if !errors.Is(context.Cause(armed), context.DeadlineExceeded) {
		t.Fatalf("cause %v", context.Cause(armed))
	}
	if stop() {
		t.Fatal("stop reported a timer that had not fired")
	}

	// Disarmed, the clock passing the deadline cancels nothing.
	ctx, cancel = context.WithCancelCause(context.Background())
	defer cancel(nil)
	_, stop = Arm(ctx, cancel, clock, time.Minute)
	if !stop() {
		t.Fatal("stop found no timer to stop")
	}
	clock.Advance(time.Hour)
	if ctx.Err() != nil {
		t.Fatalf("disarmed context cancelled: %v", context.Cause(ctx))
	}
}
