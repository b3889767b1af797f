package rota

import (
	"sync"
	"time"

	"github.com/rotahq/rota/store"
)

// EventType names what happened.
type EventType string

// Event types. Their names are stable: metrics and logs are built on them.
const (
	EventJobCompleted  EventType = "job.completed"
	EventJobFailed     EventType = "job.failed" // an attempt failed and the job will retry
	EventJobDiscarded  EventType = "job.discarded"
	EventJobCancelled  EventType = "job.cancelled"
	EventJobSnoozed    EventType = "job.snoozed"
	EventJobHandedBack EventType = "job.handed_back" // interrupted by shutdown, back in its queue
	EventJobRescued    EventType = "job.rescued"     // its lease expired; seen by the rescuing node
)

// Event is something that happened to a job on this node.
type Event struct {
	Type EventType
	// Job is the job as it was claimed (for a rescue: as it is now).
	Job *JobRow
	// Error is the attempt's error, if it failed.
	Error string
	// Duration is how long the attempt ran.
	Duration time.Duration
	// Reason says why leadership changed, for leader events.
	Reason string
	At     time.Time
}

// eventHub fans events out to subscribers. A subscriber that does not keep up misses events
// rather than slowing the node.
type eventHub struct {
	mu   sync.Mutex
	subs map[chan Event]struct{}
}

func (h *eventHub) emit(ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- ev:
		default:
		}
	}
}

// Subscribe returns a channel of this node's events and a function that ends the subscription.
// buffer sizes the channel; events that do not fit are dropped for this subscriber.
func (n *Node) Subscribe(buffer int) (<-chan Event, func()) {
	ch := make(chan Event, buffer)
	h := &n.events
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[chan Event]struct{}{}
	}
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.subs, ch)
			h.mu.Unlock()
		})
	}
}

var eventByState = map[store.State]EventType{
	store.StateCompleted: EventJobCompleted,
	store.StateRetryable: EventJobFailed,
	store.StateDiscarded: EventJobDiscarded,
	store.StateCancelled: EventJobCancelled,
	store.StateScheduled: EventJobSnoozed,
	store.StateAvailable: EventJobHandedBack,
}

// recorded is called once the store settled an outcome.
func (n *Node) recorded(e *execution, o store.Outcome, applied bool) {
	if n.starved.Load() && n.completer.Pending() <= n.backlogMax() && n.starved.CompareAndSwap(true, false) {
		for _, q := range n.queues {
			q.signal()
		}
	}
	if e.queue.limited.Load() {
		e.queue.signal()
	}
	if !applied {
		n.logger.Warn("rota: outcome ignored: the job's lease was lost and it belongs to another claim now",
			"job", e.row.ID, "kind", e.row.Kind, "fence", o.Fence, "outcome", o.State)
		return
	}
	ev := Event{Type: eventByState[o.State], Job: e.row, Duration: n.clock.Since(e.start), At: n.clock.Now()}
	if o.Error != nil {
		ev.Error = o.Error.Error
		n.logger.Info("rota: job attempt failed", "job", e.row.ID, "kind", e.row.Kind, "attempt", e.row.Attempt, "state", o.State, "error", o.Error.Error)
	}
	n.events.emit(ev)
}
