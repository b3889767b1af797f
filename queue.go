package rota

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rotahq/rota/internal/completer"
	"github.com/rotahq/rota/store"
)

// claimBatchMax caps one claim. A node with more free slots claims again at once, so the cap only
// bounds the size of one statement and one transaction.
const claimBatchMax = 500

// queue is one queue as a node serves it: a fetch loop (or several, see run) that claims as many
// jobs as there are free slots whenever it is woken (an insert notification, a freed slot while
// work remains, a poll).
type queue struct {
	node   *Node
	name   string
	max    int
	active atomic.Int64
	// more is set when the last claim filled every slot it asked for, so more work likely waits
	// and a freed slot should trigger a claim; when the queue ran dry, freed slots wait for a
	// notification or the poll instead of claiming nothing over and over.
	more atomic.Bool
	// limited is set while a fleet-wide limit applies to the queue or to one of the node's kinds.
	// A limited claim may come back short although work waits, so a job that ended, here or on
	// any node, is a reason to claim again: here once its outcome is recorded (before that the
	// store still counts it as running), elsewhere when the store announces it.
	limited atomic.Bool
	wake    chan struct{}

	// slots holds a token per handler running: at most max. A claim may bring more jobs than
	// there are free slots (see ahead); those wait here for a slot, already claimed.
	slots chan struct{}
	// freed counts the slots freed since the node started; ahead is how many of them were freed
	// while the last claim travelled: how many jobs the next claim may take beyond the free
	// slots. asked is the slots the claims in flight asked for, which no other claim may ask
	// for meanwhile.
	freed atomic.Int64
	ahead atomic.Int64
	// missed is set when a loop was woken while other loops' claims in flight held the free
	// slots: the wake-up may be for jobs those claims did not see, so the next of them to
	// return wakes a loop again, whose claim begins after the wake-up and so sees them.
	mu     sync.Mutex // guards asked and missed
	asked  int
	missed bool
}

func newQueue(n *Node, name string, max int) *queue {
	return &queue{node: n, name: name, max: max, wake: make(chan struct{}, 1), slots: make(chan struct{}, max)}
}

// takeSlot waits for a free slot and reports whether it got one before ctx ended.
func (q *queue) takeSlot(ctx context.Context) bool {
	select {
	case q.slots <- struct{}{}:
		return true
	default:
	}
	select {
	case q.slots <- struct{}{}:
		// A slot freed as ctx ended may win the select: a job whose context has ended does not
		// start its handler all the same.
		if ctx.Err() != nil {
			q.freeSlot()
			return false
		}
		return true
	case <-ctx.Done():
		return false
	}
}

// freeSlot gives back a slot takeSlot took.
func (q *queue) freeSlot() { <-q.slots }

// signal wakes the fetch loop without blocking; wake-ups coalesce.
func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// noted wakes the fetch loop for a notification that may mean claimable work: jobs inserted, or,
// under a fleet-wide limit, a job that ended anywhere and so freed room.
func (q *queue) noted(note store.Notification) {
	switch note.Topic {
	case store.TopicInsert:
		q.signal()
	case store.TopicFinal, store.TopicChanged:
		if q.limited.Load() {
			q.signal()
		}
	}
}

// released is called when a job of the queue has finished and its slot is free.
func (q *queue) released() {
	q.active.Add(-1)
	q.freed.Add(1)
	if q.more.Load() {
		q.signal()
	}
}

// aheadMax is how many jobs a claim may take beyond the free slots. While a claim travels,
// short jobs finish and free their slots, and the claim, sized to the slots free when it left,
// comes back smaller than the room it finds: with no-op jobs and 100 workers a PostgreSQL claim
// carried half of them, and claims ran at the pace of their round trip. A claim takes as many
// more as the last one saw slots freed while it travelled, which is none when jobs run longer
// than a round trip; those wait for a slot, already claimed, microseconds in the case they are
// for. Never under a fleet-wide limit, where a job held waiting here would count as running
// and keep another node from running it.
func (q *queue) aheadMax() int {
	if q.limited.Load() {
		return 0
	}
	return min(int(q.ahead.Load()), q.max)
}

// run is a fetch loop of the queue. A node runs one per queue, or as many as its store wants
// claims in flight at once (store.ConcurrentClaimer): they share the wake-ups, so a loop that is
// not claiming takes the slots freed while another's claim travels. Only the first polls.
func (q *queue) run(polls bool) {
	n := q.node
	var tick <-chan time.Time
	if polls {
		poll := n.clock.NewTicker(n.cfg.FetchPollInterval)
		defer poll.Stop()
		tick = poll.Chan()
	}
	for {
		q.claim()
		select {
		case <-n.stopFetch:
			return
		case <-q.wake:
		case <-tick:
		}
	}
}

// claim takes jobs until the slots are full or the queue has no more due work.
func (q *queue) claim() {
	n := q.node
	for {
		select {
		case <-n.stopFetch:
			return
		default:
		}
		ask := q.reserve()
		if ask == 0 {
			return
		}
		kinds := n.claimKinds()
		if len(kinds) == 0 || !n.memoryAdmits() || n.outcomesBackedUp() {
			q.settle(ask, 0)
			return
		}
		freedBefore := q.freed.Load()
		began := n.clock.Now()
		rows, err := n.cfg.Store.Claim(n.claimCtx, store.ClaimParams{
			Queue: q.name, Kinds: kinds, Max: ask, Owner: n.cfg.ID, LeaseFor: n.cfg.JobLease,
		})
		q.ahead.Store(q.freed.Load() - freedBefore)
		q.settle(ask, len(rows))
		if err != nil {
			// The store may be down for a moment: the next poll tries again. The claim may
			// have committed before its answer was lost: see strays.
			n.strays.lost.Add(1)
			n.storeError(n.claimCtx, "claim", q.name, err)
			return
		}
		n.events.emit(Event{Type: EventJobClaimed, Queue: q.name, Claim: ClaimSize{Asked: ask, Got: len(rows)},
			Duration: n.clock.Since(began), At: n.clock.Now()})
		q.more.Store(len(rows) == ask)
		for _, row := range rows {
			n.start(q, row)
		}
		if len(rows) < ask {
			return
		}
	}
}

// reserve sets aside the slots a claim may ask for, at most claimBatchMax: those neither running
// nor asked for by another loop's claim in flight, and ahead (see aheadMax). It returns 0 when
// there are none.
func (q *queue) reserve() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	free := q.max + q.aheadMax() - int(q.active.Load()) - q.asked
	if free <= 0 {
		q.missed = q.missed || q.asked > 0
		return 0
	}
	ask := min(free, claimBatchMax)
	q.asked += ask
	return ask
}

// settle gives back a claim's reservation of ask slots, got of which it filled: those count as
// running from now, in the same step, so that no other loop sees them free in between.
func (q *queue) settle(ask, got int) {
	q.mu.Lock()
	q.active.Add(int64(got))
	q.asked -= ask
	again := q.missed
	q.missed = false
	q.mu.Unlock()
	if again {
		q.signal()
	}
}

// backlogMax is more outcomes than a healthy completer ever holds: full batches in every write in
// flight and one outcome for every slot.
func (n *Node) backlogMax() int { return n.capacity + completer.HeldMax }

// outcomesBackedUp reports whether outcomes wait to be written in numbers a healthy completer never
// reaches. A slot is freed when its job's outcome is queued, not when it is written, so while the
// store refuses outcomes a node would otherwise claim job after job it cannot finish; it claims
// nothing until they are written.
// When it says so it marks the node starved, and the completer wakes the queues once the
// outcomes are written (see recorded): the slots were freed long before, so nothing else would.
func (n *Node) outcomesBackedUp() bool {
	if n.completer.Pending() <= n.backlogMax() {
		return false
	}
	n.starved.Store(true)
	return true
}
