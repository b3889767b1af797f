package postgres

import (
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// notifyGate spaces out the NOTIFYs of inserts: at most one per queue per interval from this
// Store. PostgreSQL takes a database-wide lock at the commit of every transaction that issued a
// NOTIFY, which serialises those commits; one NOTIFY per insert would cap the insert rate of the
// whole database. An insert within the interval after a NOTIFY sends none itself; once it has
// committed (owe), the gate owes its queue one, sent as soon as the interval since the queue's
// last NOTIFY has passed, which is at once when the insert itself took that long: an idle node
// wakes at most one interval late, and most often not late at all, where a timer counting the
// interval from the commit would make every held-back job wait for it whole. Owing only after
// the commit keeps the NOTIFY from reaching nodes before the jobs it announces are there to
// claim.
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

// owe records NOTIFYs held back by take for committed inserts.
func (g *notifyGate) owe(queues []string) {
	if len(queues) == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, q := range queues {
		g.owed[q] = struct{}{}
	}
	g.arm()
}

// arm sets the timer, unless it is set, for the first moment an owed NOTIFY may go: when the
// interval since its queue's last NOTIFY ends, or now if it has. g.mu is held.
func (g *notifyGate) arm() {
	if g.timer != nil || g.closed || len(g.owed) == 0 {
		return
	}
	now := g.clock.Now()
	wait := g.interval
	for q := range g.owed {
		wait = min(wait, g.last[q].Add(g.interval).Sub(now)) // a queue never let through: long ago
	}
	g.timer = g.clock.AfterFunc(max(wait, 0), g.flush)
}

// flush sends the owed NOTIFYs whose interval has ended and arms the timer for the others.
func (g *notifyGate) flush() {
	g.mu.Lock()
	g.timer = nil
	if g.closed {
		g.mu.Unlock()
		return
	}
	now := g.clock.Now()
	var queues []string
	for q := range g.owed {
		if now.Sub(g.last[q]) >= g.interval {
			queues = append(queues, q)
			delete(g.owed, q)
		}
	}
	for q, last := range g.last {
		if _, owed := g.owed[q]; !owed && now.Sub(last) >= g.interval {
			delete(g.last, q) // forget idle queues: the map stays as small as the busy set
		}
	}
	for _, q := range queues {
		g.last[q] = now
	}
	g.arm()
	g.mu.Unlock()
	if len(queues) > 0 {
		slices.Sort(queues)
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
