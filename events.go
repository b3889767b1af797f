package rota

import (
	"context"
	"sync"
	"time"

	"github.com/rotahq/rota/store"
)

// EventType names what happened.
type EventType string

// Event types. Their names are stable: the node's logs (logevents.go) and package metrics are
// built on them, so what a node logs and what it counts are the same facts. Leader, singleton and
// memory-floor events are declared next to what emits them (leader.go, singleton.go, memfloor.go).
const (
	// Outcomes: one per attempt, once the store recorded it. Job is the row as claimed, Duration
	// how long the attempt ran.
	EventJobCompleted  EventType = "job.completed"
	EventJobFailed     EventType = "job.failed" // an attempt failed and the job will retry
	EventJobDiscarded  EventType = "job.discarded"
	EventJobCancelled  EventType = "job.cancelled"
	EventJobSnoozed    EventType = "job.snoozed"
	EventJobHandedBack EventType = "job.handed_back" // interrupted by shutdown, back in its queue
	// EventJobFenceRefused ends an attempt whose outcome the store refused: the job's lease had
	// lapsed and it was claimed again, so the newer claim decides its fate. Outcome says what
	// this attempt wanted.
	EventJobFenceRefused EventType = "job.fence_refused"
	EventJobRescued      EventType = "job.rescued" // its lease expired; seen by the rescuing node
	// EventJobAbandoned is an attempt whose handler ignored its cancelled context past the
	// grace period (TimeoutGrace): its goroutine is left behind, its slot is freed and the
	// attempt ends as its context's end decides (a timeout: job.failed or job.discarded follows;
	// a stop or a lost lease: job.handed_back; a user's cancel: job.cancelled). Error says why
	// the context ended.
	EventJobAbandoned EventType = "job.abandoned"
	// EventDrainDeadline is a stop whose deadline passed with Count jobs still running: they are
	// cancelled and handed back.
	EventDrainDeadline EventType = "node.drain_deadline"
	// EventOutcomesUnrecorded is a stop that ended with Count outcomes not written to the store:
	// the grace (Reason "grace") or the caller's deadline ("deadline") passed first. The rescuer
	// retries those jobs once their leases expire.
	EventOutcomesUnrecorded EventType = "node.outcomes_unrecorded"
	// EventNodeStarted is the node taking work: Count queues, Kinds it has workers for.
	// EventNodeStopped is its stop done, every job handed back or ended.
	EventNodeStarted EventType = "node.started"
	EventNodeStopped EventType = "node.stopped"

	// EventJobClaimed is one claim call that succeeded (possibly with no job): Queue, Claim
	// (asked and got) and Duration (the store's round trip).
	EventJobClaimed EventType = "job.claimed"
	// EventJobStarted is an attempt handed to a runner. Latency is how long the job waited to
	// start: from its insert, or from its RunAt when that is later (delayed, retried, snoozed).
	EventJobStarted EventType = "job.started"

	// EventServiceRun is one run of a maintenance service (rescuer, pruner, cron, registry,
	// tidier, stats): Service names it, Count says what it did (jobs rescued, jobs pruned, occurrences
	// planned, rows of counts written; 0 for the others), Duration how long it took, Error why it
	// failed. The rescuer, the registry and stats run on every node, the others on the leader.
	EventServiceRun EventType = "leader.service"
	// EventStoreError is a store call of the node's own loops that failed: Op names it (claim,
	// heartbeat, complete, list_limits, register, deregister, subscribe, rescue, prune,
	// prune_nodes, prune_stats, tidy, plan_schedules, add_stats; the leader election's identity,
	// lease, release_lease and restart_requests, singleton_ before them for a singleton's
	// lease), Queue is set for claims. Calls cut short by the node stopping or leadership ending
	// are not errors. Every failure is an event; the log says them rate-limited.
	EventStoreError EventType = "store.error"
	// EventStoreReset is the store's identity changing under the node: it was flushed, restored
	// from a backup or replaced, so the leases and fences taken before prove nothing. Reason
	// says from which identity to which. Leadership and singleton leases are given up.
	EventStoreReset EventType = "store.reset"
)

// ClaimSize is what one claim asked the store for and got.
type ClaimSize struct {
	Asked, Got int
}

// Event is something that happened on this node. Which fields are set depends on Type.
type Event struct {
	Type EventType
	// Job is the job as it was claimed (for a rescue: as it is now).
	Job *JobRow
	// Error is the attempt's error, if it failed, or the failed call's.
	Error string
	// Duration is how long the attempt, claim or service run took.
	Duration time.Duration
	// Reason says why leadership, a singleton lease or the memory floor changed, or, for a
	// failed write of outcomes (store.error, op complete), what the node does next: retry,
	// one_by_one, stripped (written without its error text and result).
	Reason string
	At     time.Time

	// Queue is the claim's queue, or the failed claim's.
	Queue string
	// Claim is the size of a claim (job.claimed).
	Claim ClaimSize
	// Latency is how long a job waited to start (job.started).
	Latency time.Duration
	// Outcome is the state the attempt asked for (job.fence_refused).
	Outcome store.State
	// Service names a maintenance service (leader.service, leader.service_state).
	Service string
	// Count is what the service run did (leader.service), the jobs still running at a drain
	// deadline (node.drain_deadline), the outcomes a failed write carried (store.error) or a
	// stop left unwritten (node.outcomes_unrecorded), or the queues a node serves (node.started).
	Count int
	// Op names the store call that failed (store.error).
	Op string
	// Token is the leader lease's fencing token (leader.elected, leader.service_state).
	Token int64
	// Kinds are the kinds the node has workers for (node.started).
	Kinds []string
}

// eventHub hands events to the node's log, to the synchronous handlers, in order, and to
// subscribers. A subscriber that does not keep up misses events rather than slowing the node.
type eventHub struct {
	mu       sync.Mutex
	log      func(Event)
	handlers []func(Event)
	subs     map[chan Event]struct{}
}

// emit is called by whoever witnessed the event, on its own goroutine. The lock keeps every
// consumer seeing events in one order, which makes a gauge built of increments and decrements
// (jobs in flight) never go below zero.
func (h *eventHub) emit(ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.log != nil {
		h.log(ev)
	}
	for _, f := range h.handlers {
		f(ev)
	}
	for ch := range h.subs {
		select {
		case ch <- ev:
		default:
		}
	}
}

// Handle registers h to be called with every event of this node, for consumers that must not miss
// one (metrics). h is called inline, in order, from the goroutine that emits, with the node's
// event lock held: it must be fast, must not block, and must not call Handle or Subscribe. Register
// it before Start to see every event. Consumers that may miss events use Subscribe.
func (n *Node) Handle(h func(Event)) {
	n.events.mu.Lock()
	n.events.handlers = append(n.events.handlers, h)
	n.events.mu.Unlock()
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
	ev := Event{Type: eventByState[o.State], Job: e.row, Duration: n.clock.Since(e.start), At: n.clock.Now()}
	if !applied {
		ev.Type, ev.Outcome = EventJobFenceRefused, o.State
	}
	if o.Error != nil {
		ev.Error = o.Error.Error
	}
	n.events.emit(ev)
}

// storeError emits a failed store call, unless ctx ended: a call cut short by the node stopping
// or by leadership ending is not the store's failure.
func (n *Node) storeError(ctx context.Context, op, queue string, err error) {
	if ctx.Err() != nil {
		return
	}
	n.events.emit(Event{Type: EventStoreError, Op: op, Queue: queue, Error: err.Error(), At: n.clock.Now()})
}

// startLatency is how long row waited between becoming due and starting at now.
func startLatency(row *JobRow, now time.Time) time.Duration {
	due := row.CreatedAt
	if row.RunAt.After(due) {
		due = row.RunAt
	}
	if d := now.Sub(due); d > 0 {
		return d
	}
	return 0
}
