package leader

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Service is work that runs on the leader only. Start must not block: it starts goroutines bound
// to ctx, which is cancelled when leadership ends, before Stop is called. Both must be idempotent.
type Service interface {
	Name() string
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

type tokenKey struct{}

// TokenFrom returns the lease token a service was started under: the value to carry into writes
// that must not land after leadership passed on.
func TokenFrom(ctx context.Context) (int64, bool) {
	token, ok := ctx.Value(tokenKey{}).(int64)
	return token, ok
}

// stopTimeout bounds a service's Stop on step-down: a leader that lost its lease must stop acting
// now, not when a slow service agrees.
const stopTimeout = 5 * time.Second

// services starts and stops the leader's services. A service whose Start failed is retried on
// the next renewal.
type services struct {
	logger   *slog.Logger
	onChange func(ServiceChange) // nil: changes are logged

	mu      sync.Mutex
	list    []Service
	running map[string]context.CancelFunc
	restart map[string]bool
	wake    chan struct{}
	// changes are told once mu is released (flush): the callback may call back in, as a
	// handler that restarts a service that failed to start does.
	changes []ServiceChange
}

func newServices(logger *slog.Logger, onChange func(ServiceChange)) *services {
	return &services{logger: logger, onChange: onChange, running: map[string]context.CancelFunc{}, restart: map[string]bool{}, wake: make(chan struct{}, 1)}
}

func (s *services) add(svc Service) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list, svc)
}

func (s *services) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, len(s.list))
	for i, svc := range s.list {
		names[i] = svc.Name()
	}
	return names
}

func (s *services) startPending(parent context.Context, token int64) {
	defer s.flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, svc := range s.list {
		if _, ok := s.running[svc.Name()]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(context.WithValue(parent, tokenKey{}, token))
		if err := svc.Start(ctx); err != nil {
			cancel()
			s.tell(ServiceChange{Service: svc.Name(), What: ServiceStartFailed, Err: err})
			continue
		}
		s.running[svc.Name()] = cancel
		s.tell(ServiceChange{Service: svc.Name(), What: ServiceStarted, Token: token})
	}
}

// stopAll ends every service's context first, at once, and only then waits for each to stop, in
// the reverse of their order: a service slow to stop must not keep the next one acting on after
// leadership ended, past the moment the store may hand the lease on.
func (s *services) stopAll() {
	defer s.flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cancel := range s.running {
		cancel()
	}
	for i := len(s.list) - 1; i >= 0; i-- {
		s.stopLocked(s.list[i])
	}
}

// stopLocked ends svc's context, if it runs, and waits for its Stop, at most stopTimeout.
func (s *services) stopLocked(svc Service) {
	cancel, ok := s.running[svc.Name()]
	if !ok {
		return
	}
	cancel()
	delete(s.running, svc.Name())
	ctx, cancelStop := context.WithTimeout(context.Background(), stopTimeout)
	defer cancelStop()
	if err := svc.Stop(ctx); err != nil {
		s.tell(ServiceChange{Service: svc.Name(), What: ServiceStopFailed, Err: err})
	}
}

// tell keeps a change for flush; mu is held.
func (s *services) tell(c ServiceChange) { s.changes = append(s.changes, c) }

// flush hands the changes told so far to the callback, or logs them, without mu held.
func (s *services) flush() {
	s.mu.Lock()
	changes := s.changes
	s.changes = nil
	s.mu.Unlock()
	for _, c := range changes {
		if s.onChange != nil {
			s.onChange(c)
		} else {
			LogServiceChange(s.logger, c)
		}
	}
}

// LogServiceChange says c in logger: starts and restarts at info, failures at error.
func LogServiceChange(logger *slog.Logger, c ServiceChange) {
	switch c.What {
	case ServiceStarted:
		logger.Info("rota: leader service started", "service", c.Service, "token", c.Token)
	case ServiceStartFailed:
		logger.Error("rota: leader service failed to start; retrying at the next renewal", "service", c.Service, "error", c.Err)
	case ServiceStopFailed:
		logger.Error("rota: leader service failed to stop cleanly", "service", c.Service, "error", c.Err)
	case ServiceRestarting:
		logger.Info("rota: leader service restarting", "service", c.Service)
	}
}

func (s *services) requestRestart(name string) {
	s.mu.Lock()
	s.restart[name] = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *services) restartRequested() <-chan struct{} { return s.wake }

// restartPending stops the services asked to restart and, when leading, starts them again.
func (s *services) restartPending(ctx context.Context, leading bool, token int64) {
	s.mu.Lock()
	for _, svc := range s.list {
		if s.restart[svc.Name()] {
			s.stopLocked(svc)
			s.tell(ServiceChange{Service: svc.Name(), What: ServiceRestarting})
		}
	}
	clear(s.restart)
	s.mu.Unlock()
	s.flush()
	if leading {
		s.startPending(ctx, token)
	}
}

// Loop is a Service that calls Do every Every while this node leads: the shape of the rescuer,
// the pruner and most maintenance work.
type Loop struct {
	ServiceName string
	Every       time.Duration
	Clock       clockwork.Clock
	Do          func(ctx context.Context)

	mu   sync.Mutex
	done chan struct{}
}

// Name returns ServiceName.
func (l *Loop) Name() string { return l.ServiceName }

// Start runs Do at once and then every Every until ctx ends.
func (l *Loop) Start(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done != nil {
		return nil
	}
	done := make(chan struct{})
	l.done = done
	go func() {
		defer close(done)
		tick := l.Clock.NewTicker(l.Every)
		defer tick.Stop()
		for {
			l.Do(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.Chan():
			}
		}
	}()
	return nil
}

// Stop waits for the loop to end (its context is already cancelled).
func (l *Loop) Stop(ctx context.Context) error {
	l.mu.Lock()
	done := l.done
	l.done = nil
	l.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
