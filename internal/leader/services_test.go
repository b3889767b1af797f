package leader

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
)

// funcService is a Service made of functions.
type funcService struct {
	name  string
	start func(context.Context) error
	stop  func(context.Context) error
}

func (f funcService) Name() string                    { return f.name }
func (f funcService) Start(ctx context.Context) error { return f.start(ctx) }
func (f funcService) Stop(ctx context.Context) error  { return f.stop(ctx) }

// When leadership ends, every service's context ends before any Stop is waited for: a service
// slow to stop does not keep another acting on after the lease may have passed on.
func TestStopAllEndsEveryServiceBeforeWaiting(t *testing.T) {
	var changes []ServiceChange
	s := newServices(slog.New(slog.DiscardHandler), func(c ServiceChange) { changes = append(changes, c) })
	var firstCtx context.Context
	s.add(funcService{
		name:  "first",
		start: func(ctx context.Context) error { firstCtx = ctx; return nil },
		stop:  func(context.Context) error { return nil },
	})
	// Stopped first (services stop in the reverse of their order), it stops only once first's
	// context has ended, or gives up at its stop deadline.
	s.add(funcService{
		name:  "slow",
		start: func(context.Context) error { return nil },
		stop: func(ctx context.Context) error {
			select {
			case <-firstCtx.Done():
				return nil
			case <-ctx.Done():
				return fmt.Errorf("first still running while slow stopped: %w", ctx.Err())
			}
		},
	})
	s.startPending(context.Background(), 1)
	s.stopAll()
	for _, c := range changes {
		if c.What == ServiceStopFailed {
			t.Errorf("service %s: %v", c.Service, c.Err)
		}
	}
	if firstCtx.Err() == nil {
		t.Errorf("first's context did not end")
	}
}
