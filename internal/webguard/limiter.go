package webguard

import (
	"container/list"
	"math"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Defaults for NewLimiter.
const (
	// FailBurstDefault is how many failures an address may have in a row: enough for a person
	// who mistypes or pastes the wrong token a few times, far too few to guess one.
	FailBurstDefault = 10
	// FailEveryDefault is how often an address that used its burst earns one more try: ten an
	// hour, so even a token of a few words cannot be guessed online, while someone who locked
	// themselves out waits seconds, not hours.
	FailEveryDefault = 6 * time.Second
	// ClientsMaxDefault bounds how many addresses the limiter remembers, so that a flood of
	// addresses cannot grow it without end. When it is full, the address whose last failure is
	// oldest is forgotten (and starts again with a full burst).
	ClientsMaxDefault = 10_000
)

// Limiter limits failed authentications per client: a token bucket of burst failures that
// refills at one per every. Only failures take from it, so a client with the right token is
// never slowed, whatever its rate; but once a client is out of tries every request from it is
// refused until one comes back, the right token included, or the refusals would tell a guesser
// which guess was right.
//
// A failure is counted after the request was checked, so requests sent at the same time are all
// checked before any of them counts: the client then owes more than its burst, and waits for
// each of those failures in turn. Over time no client fails more often than once per every.
//
// The bucket is kept as the time it will be full again (the generic cell rate algorithm), in
// whole durations: a client told to retry after n seconds is let in after n seconds, with no
// rounding in between.
type Limiter struct {
	clock clockwork.Clock
	burst time.Duration // burst-1 failures' worth of every: the most a client may owe and try
	every time.Duration
	max   int

	mu      sync.Mutex
	clients map[string]*list.Element // of *bucket
	recent  *list.List               // most recent failure first
}

type bucket struct {
	key  string
	full time.Time // when the client owes nothing again
}

// NewLimiter returns a Limiter; zero arguments take the defaults, and clock may be nil for the
// real one.
func NewLimiter(clock clockwork.Clock, burst int, every time.Duration, maxClients int) *Limiter {
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	if burst <= 0 {
		burst = FailBurstDefault
	}
	if every <= 0 {
		every = FailEveryDefault
	}
	if maxClients <= 0 {
		maxClients = ClientsMaxDefault
	}
	return &Limiter{clock: clock, burst: time.Duration(burst-1) * every, every: every, max: maxClients,
		clients: map[string]*list.Element{}, recent: list.New()}
}

// Wait returns how long key must wait before its next try; 0 when it may try now.
func (l *Limiter) Wait(key string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.clients[key]
	if !ok {
		return 0
	}
	owed := e.Value.(*bucket).full.Sub(l.clock.Now())
	return max(0, owed-l.burst)
}

// Fail counts a failed try of key.
func (l *Limiter) Fail(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	e, ok := l.clients[key]
	if !ok {
		if l.recent.Len() >= l.max {
			oldest := l.recent.Back()
			l.recent.Remove(oldest)
			delete(l.clients, oldest.Value.(*bucket).key)
		}
		e = l.recent.PushFront(&bucket{key: key, full: now})
		l.clients[key] = e
	}
	b := e.Value.(*bucket)
	if b.full.Before(now) {
		b.full = now
	}
	b.full = b.full.Add(l.every)
	l.recent.MoveToFront(e)
}

// Clients returns how many clients the limiter remembers.
func (l *Limiter) Clients() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recent.Len()
}

// RetryAfter is the value of a Retry-After header for a wait: whole seconds, rounded up, so a
// client that waits that long is let in.
func RetryAfter(wait time.Duration) int {
	return int(math.Ceil(wait.Seconds()))
}
