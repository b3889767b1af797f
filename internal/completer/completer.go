// Package completer records the outcomes of attempts in batches.
//
// While one write is in flight, new outcomes gather; the next write takes them all. An idle node
// therefore writes each outcome at once (lowest latency), and a busy one writes hundreds per round
// trip (highest throughput), without a timer to tune. Should a write take long enough that a
// whole batch gathers (a store settling a large fan-out's dependents before its Complete
// returns), a second write takes it, so that no outcome waits for another job's housekeeping.
// A failed write is retried with backoff and never dropped: outcomes are only lost if the process
// dies, and then the jobs' leases expire and the rescuer takes them.
package completer

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/internal/backoff"
	"github.com/rotahq/rota/store"
)

// BatchMax caps one write, so one statement's parameter list and transaction stay small.
const BatchMax = 1000

// writesInFlight is how many writes may be in flight at once. A second one starts only when a
// whole batch waits (see take): the write in flight is taking long, as when the store settles a
// large fan-out's dependents before its Complete returns, and the node's other outcomes must
// not wait for that. A busy node otherwise keeps one write in flight and large batches, which
// cost the store least per outcome.
const writesInFlight = 2

// HeldMax is the most outcomes that writes in flight hold.
const HeldMax = writesInFlight * BatchMax

// retryBackoff spaces the retries of a failed write: short at first (a lost connection is often
// back at once), never longer than a few seconds so that a recovered store is used soon, and
// jittered so that the nodes of a fleet that lost the store together do not retry in lockstep.
var retryBackoff = backoff.Policy{Base: 50 * time.Millisecond, Max: 5 * time.Second}

type item struct {
	outcome store.Outcome
	done    func(applied bool)
}

// Failure is a write of outcomes that failed, and what the completer does next.
type Failure struct {
	Jobs int // outcomes the write carried
	Err  error
	Next Next
}

// Next is what the completer does after a failed write.
type Next string

// What follows a failed write.
const (
	Retry    Next = "retry"      // the same write, after a backoff
	Split    Next = "one_by_one" // the batch kept failing: each outcome is written alone
	Stripped Next = "stripped"   // one outcome kept failing: it is written without its error text and result
)

// Completer batches outcomes into store.Complete calls. Create it with New, then Run it.
type Completer struct {
	store  store.Store
	clock  clockwork.Clock
	report func(Failure)

	mu      sync.Mutex
	pending []item
	// spare is the array of the last batch taken whole, once written: the next outcomes are
	// added to it rather than to a new array grown from nothing each batch.
	spare []item
	// writing is how many outcomes the writes in flight carry: they are outstanding too.
	writing int
	// inflight is how many writes are in flight, at most writesInFlight.
	inflight int
	// flying holds, for each write in flight, its outcomes' jobs and fences (see Holds).
	flying [][]claim
	wake   chan struct{}
}

// claim names the claim an outcome ends: its job and fence.
type claim struct{ id, fence int64 }

// New returns a Completer writing to s, which tells report of every failed write. Writes cut
// short by the end of Run's context are not reported: what they carried is the rescuer's.
func New(s store.Store, clock clockwork.Clock, report func(Failure)) *Completer {
	return &Completer{store: s, clock: clock, report: report, wake: make(chan struct{}, 1)}
}

// Add queues an outcome. done, if not nil, is called once the write settled: applied is false
// when the store ignored the outcome because its fence was stale.
func (c *Completer) Add(o store.Outcome, done func(applied bool)) {
	c.mu.Lock()
	c.pending = append(c.pending, item{outcome: o, done: done})
	n := len(c.pending)
	c.mu.Unlock()
	// Run can act only on the first outcome waiting (no write may be in flight) or on a whole
	// batch (a second write may start); a write that ends wakes it for the rest. Waking it for
	// every outcome while a write is in flight would only have it find nothing to take.
	if n == 1 || n == BatchMax {
		c.poke()
	}
}

// Pending reports how many outcomes are not written yet: waiting, or in the writes in flight.
// The node heartbeats while any is, so their jobs' leases hold until they are recorded.
func (c *Completer) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) + c.writing
}

// Run writes outcomes until drain is closed and nothing is pending, or until ctx ends (then what is
// pending is abandoned to the rescuer). It returns once no write is in flight.
func (c *Completer) Run(ctx context.Context, drain <-chan struct{}) {
	var wg sync.WaitGroup
	defer wg.Wait()
	draining := false // drain is closed: Run returns once nothing is pending
	for {
		if ctx.Err() != nil {
			return // what is pending is the rescuer's now
		}
		if batch, claims, whole := c.take(); len(batch) > 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.write(ctx, batch, claims, whole)
				c.poke()
			}()
			continue
		}
		if draining && c.Pending() == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-drain:
			draining, drain = true, nil
		}
	}
}

func (c *Completer) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// take hands over up to BatchMax pending outcomes, or none while writesInFlight writes are, and
// the claims they end (flying until write is done); whole says they were all of them, so that
// the array they are in is the batch's alone.
func (c *Completer) take() (batch []item, claims []claim, whole bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := min(len(c.pending), BatchMax)
	if n == 0 || c.inflight == writesInFlight || c.inflight > 0 && n < BatchMax {
		return nil, nil, false
	}
	c.inflight++
	c.writing += n
	if n == len(c.pending) {
		batch, whole = c.pending, true
		c.pending, c.spare = c.spare[:0], nil
	} else {
		batch = c.pending[:n:n]
		c.pending = c.pending[n:]
	}
	claims = make([]claim, n)
	for i, it := range batch {
		claims[i] = claim{it.outcome.ID, it.outcome.Fence}
	}
	c.flying = append(c.flying, claims)
	return batch, claims, whole
}

// Holds reports whether an outcome of job id's claim with fence is waiting or being written:
// the job has ended on the node, and the store shows it running until the write is done.
func (c *Completer) Holds(id, fence int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, it := range c.pending {
		if it.outcome.ID == id && it.outcome.Fence == fence {
			return true
		}
	}
	for _, claims := range c.flying {
		if slices.Contains(claims, claim{id, fence}) {
			return true
		}
	}
	return false
}

// write records batch, retrying until it is written or ctx ends, and then counts it out of
// what is in flight. A batch that was all that was pending leaves its array as the spare.
func (c *Completer) write(ctx context.Context, batch []item, claims []claim, whole bool) {
	c.writeSome(ctx, batch, false, false)
	c.mu.Lock()
	c.flying = slices.DeleteFunc(c.flying, func(f []claim) bool { return &f[0] == &claims[0] })
	c.mu.Unlock()
	n := len(batch)
	// Let go of the outcomes and callbacks (the jobs' rows): a part batch's region of its array
	// is its own (take caps it), and the array lives on with the outcomes after it.
	clear(batch)
	c.mu.Lock()
	c.inflight--
	c.writing -= n
	if whole && c.spare == nil {
		c.spare = batch[:0]
	}
	c.mu.Unlock()
}

// isolateAfter is how many times the store refuses a batch of several outcomes before they are
// written one by one (an outcome the store refuses must not hold back the others), and one
// outcome alone before it is written stripped. A store that is down (store.ErrUnavailable)
// refuses nothing: it fails every write alike, and the same write is retried until it is back.
const isolateAfter = 2

// writeSome records batch, retrying until it is written or ctx ends. With handBack, a batch of
// one outcome that the store still refuses after it was stripped is handed back instead (false),
// and batch[0] is left as it was last tried: the split writes it again once the outcomes after it
// are written, so that one job the store cannot record holds none of the others back.
// maybeWritten says an earlier write of these outcomes failed with the store unavailable, and
// may have committed before its answer was lost.
func (c *Completer) writeSome(ctx context.Context, batch []item, handBack, maybeWritten bool) bool {
	outcomes := make([]store.Outcome, len(batch))
	for i, it := range batch {
		outcomes[i] = it.outcome
	}
	for failures, refusals := 0, 0; ; {
		applied, err := c.store.Complete(ctx, outcomes)
		if err == nil {
			if maybeWritten || failures > refusals {
				c.recheck(ctx, outcomes, applied)
			}
			for i, it := range batch {
				if it.done != nil {
					it.done(applied[i])
				}
			}
			return true
		}
		failures++
		if !errors.Is(err, store.ErrUnavailable) {
			refusals++
		}
		if len(batch) == 1 && refusals == isolateAfter {
			// Alone and still refused: perhaps what the handler produced (its error text, its
			// result) is what the store cannot take. Keep the outcome itself, which is what
			// the job's life depends on, and say what was dropped.
			outcomes[0] = stripped(outcomes[0], err)
			batch[0].outcome = outcomes[0]
			c.fail(ctx, Failure{Jobs: 1, Err: err, Next: Stripped})
			continue
		}
		if len(batch) == 1 && handBack && refusals > isolateAfter {
			c.fail(ctx, Failure{Jobs: 1, Err: err, Next: Retry})
			return false
		}
		if len(batch) > 1 && refusals >= isolateAfter {
			c.fail(ctx, Failure{Jobs: len(batch), Err: err, Next: Split})
			var refused []item
			for _, it := range batch {
				if ctx.Err() != nil {
					return true // what is left is the rescuer's
				}
				one := []item{it}
				if !c.writeSome(ctx, one, true, maybeWritten || failures > refusals) {
					refused = append(refused, one[0])
				}
			}
			for _, it := range refused {
				if ctx.Err() != nil {
					return true
				}
				c.writeSome(ctx, []item{it}, false, true)
			}
			return true
		}
		delay := retryBackoff.Delay(failures)
		c.fail(ctx, Failure{Jobs: len(batch), Err: err, Next: Retry})
		select {
		case <-ctx.Done():
			return true // the node says what it left unrecorded
		case <-c.clock.After(delay):
		}
	}
}

// recheck reads the jobs of the outcomes the store did not apply, after a write whose answer
// was lost: one of those may have been applied by the lost write itself, and its node would
// otherwise report the attempt's own outcome as refused (EventJobFenceRefused). A job that
// cannot be read is left as refused.
func (c *Completer) recheck(ctx context.Context, outcomes []store.Outcome, applied []bool) {
	for i, o := range outcomes {
		if applied[i] {
			continue
		}
		if row, err := c.store.Get(ctx, o.ID); err == nil && landed(row, o) {
			applied[i] = true
		}
	}
}

// landed reports whether row is job o.ID as outcome o left it. The claim o ends is still the
// job's latest (its fence), the job left running for the state o asks for (or the one a cancel
// request makes of it), and the attempt's last error is o's own, not a rescue's: a rescue of
// the same claim is the one other way such a job leaves running with the fence unchanged.
func landed(row *store.JobRow, o store.Outcome) bool {
	want := o.State
	if row.CancelRequested {
		want = store.CancelRequestedState(o.State)
	}
	if row.Fence != o.Fence || row.State != want {
		return false
	}
	n := len(row.Errors)
	if o.Error != nil {
		return n > 0 && row.Errors[n-1].Attempt == row.Attempt &&
			row.Errors[n-1].Error == store.PortableError(*o.Error).Error
	}
	return n == 0 || row.Errors[n-1].Error != store.RescueError(row.AttemptedBy) || row.Errors[n-1].Attempt < row.Attempt
}

func (c *Completer) fail(ctx context.Context, f Failure) {
	if ctx.Err() == nil && c.report != nil {
		c.report(f)
	}
}

// stripped is o without what a handler produced: its result, and its error's text and stack,
// which become a note of why they are missing.
func stripped(o store.Outcome, why error) store.Outcome {
	o.Result = nil
	if o.Error != nil {
		e := *o.Error
		msg := why.Error()
		if len(msg) > 500 {
			msg = msg[:500]
		}
		e.Error, e.Trace = "the store refused this attempt's error text: "+msg, ""
		o.Error = &e
	}
	return o
}
