package postgres

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// notifyGate spaces out the NOTIFYs of inserts: at most one per queue per interval from this
// Store. PostgreSQL takes a database-wide lock at the commit of every transaction that issued a
// NOTIFY, which serialises those commits; one NOTIFY per insert would cap the insert rate of the
// whole database. An insert within the interval after a NOTIFY sends none itself; once it has
// committed (owe), the gate owes its queue one, sent by a timer when the interval ends, so an
// idle node wakes at most one interval late. Owing only after the commit keeps the timer's
// NOTIFY from reaching nodes before the jobs it announces are there to claim.
type notifyGate struct {
	clock    clockwork.Clock // the host's clock in production: the interval is this process's pacing
	interval time.Duration
	send     func(queues []string)

	mu     sync.Mutex
	last   map[string]time.Time // when a NOTIFY for the queue was last let through
	owed   map[string]struct{}
	timer  clockwork.Timer
	closed bool
}

func newNotifyGate(clock clockwork.Clock, interval time.Duration, send func(queues []string)) *notifyGate {
	return &notifyGate{
		clock:    clock,
		interval: interval,
		send:     send,
		last:     make(map[string]time.Time),
		owed:     make(map[string]struct{}),
	}
}

// take splits queues into those the inserting statement should NOTIFY itself (through) and
// those held back (later), which the caller passes to owe once its insert has committed.
func (g *notifyGate) take(queues []string) (through, later []string) {
	if g.interval <= 0 || len(queues) == 0 {
		return queues, nil
	}
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, q := range queues {
		if last, ok := g.last[q]; ok && now.Sub(last) < g.interval {
			later = append(later, q)
			continue
		}
		g.last[q] = now
		delete(g.owed, q)
		through = append(through, q)
	}
	return through, later
}

// owe records NOTIFYs held back by take for committed inserts, to be sent when the interval ends.
func (g *notifyGate) owe(queues []string) {
	if len(queues) == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, q := range queues {
		g.owed[q] = struct{}{}
	}
	if g.timer == nil && !g.closed {
		g.timer = g.clock.AfterFunc(g.interval, g.flush)
	}
}

// flush sends the NOTIFYs the gate owes.
func (g *notifyGate) flush() {
	g.mu.Lock()
	g.timer = nil
	if g.closed {
		g.mu.Unlock()
		return
	}
	queues := slices.Sorted(maps.Keys(g.owed))
	clear(g.owed)
	now := g.clock.Now()
	for q, last := range g.last {
		if now.Sub(last) >= g.interval {
			delete(g.last, q) // forget idle queues: the map stays as small as the busy set
		}
	}
	for _, q := range queues {
		g.last[q] = now
	}
	g.mu.Unlock()
	if len(queues) > 0 {
		g.send(queues)
	}
}

func (g *notifyGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	if g.timer != nil {
		g.timer.Stop()
		g.timer = nil
	}
}
