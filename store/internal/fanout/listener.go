package fanout

import (
	"context"
	"sync"

	"github.com/rotahq/rota/store"
)

// Listener is a store's one notification connection, shared by all its subscribers. The first
// Subscribe starts run in the background and returns once run has called ready — its connection
// listens, or its first attempt failed and it goes on retrying — so that whatever is written
// after Subscribe returns is delivered. Close ends run and every subscription. A poll-only
// Listener never runs: its subscriptions deliver nothing until they end.
type Listener struct {
	hub      *Hub
	run      func(ctx context.Context, ready func())
	pollOnly bool

	mu      sync.Mutex
	started bool
	closed  bool
	stop    context.CancelFunc
	ready   chan struct{}
	once    sync.Once
	done    chan struct{}
}

// NewListener returns a Listener whose subscribers may fall buffer notifications behind. run
// keeps the connection until its context ends, publishing to Hub(); it calls ready once it
// listens or its first attempt failed (a later call does nothing).
func NewListener(buffer int, pollOnly bool, run func(ctx context.Context, ready func())) *Listener {
	return &Listener{hub: New(buffer), run: run, pollOnly: pollOnly, ready: make(chan struct{}), done: make(chan struct{})}
}

// Hub is what run and the store publish to.
func (l *Listener) Hub() *Hub { return l.hub }

// Subscribe subscribes until ctx ends or the Listener closes, starting run on the first call.
func (l *Listener) Subscribe(ctx context.Context) (<-chan store.Notification, error) {
	l.mu.Lock()
	ch, err := l.hub.Subscribe(ctx)
	if err != nil {
		l.mu.Unlock()
		return nil, err
	}
	if !l.started {
		l.started = true
		if l.pollOnly {
			l.markReady()
			close(l.done)
		} else {
			runCtx, stop := context.WithCancel(context.Background())
			l.stop = stop
			go func() {
				defer close(l.done)
				defer l.markReady()
				l.run(runCtx, l.markReady)
			}()
		}
	}
	l.mu.Unlock()
	select {
	case <-l.ready:
	case <-ctx.Done():
	}
	return ch, nil
}

// Running reports whether run was started: never for a poll-only Listener, nor before the first
// Subscribe.
func (l *Listener) Running() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stop != nil
}

func (l *Listener) markReady() { l.once.Do(func() { close(l.ready) }) }

// Close ends every subscription and waits for run to return.
func (l *Listener) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.hub.Close()
	stop := l.stop
	l.mu.Unlock()
	if stop != nil {
		stop()
		<-l.done
	}
}
