package redis

import (
	"context"
	"sync"

	"github.com/rotahq/rota/store"
)

// coalesceMax is the most jobs a call may carry to be coalesced with others: larger calls
// gain nothing from sharing a script and go alone.
const coalesceMax = 64

// coalescer gathers Insert calls that arrive while another is in flight into one script call.
// A script's fixed cost (the call and its arguments, the time, the id, the notification: ~55
// thousand instructions of Redis) is more than what one more job adds to it (~43 thousand), and
// a round trip more, so producers inserting one job at a time from many goroutines pay it once
// per group rather than once per job. A call that finds fewer than
// coalesceInflight groups in flight goes at once: coalescing never delays a lone producer.
type coalescer struct {
	// do inserts jobs in one call: the Store's insertNow.
	do func(context.Context, []store.InsertParams) ([]store.InsertResult, error)
	// limit is how many groups may be in flight at once: the Store's is coalesceInflight.
	limit int

	mu sync.Mutex
	// inflight counts the groups sent and not answered; while limit are, calls
	// wait in next.
	inflight int
	next     []*insertCall
}

// coalesceInflight is how many groups may be in flight at once. Two would keep Redis busy with
// one group while the next gathers and travels, if Redis were all a group waited for; but each
// group also waits for its producers' goroutines to be woken and to come back, and on a machine
// whose cores Redis shares that wait is as long as the script. Ten producers inserting one job
// at a time made 34,000–37,000 inserts/s with two, 38,000–43,000 with four or six, 40,000 with
// ten (groups of one), and Redis' CPU per job barely changed from two to six.
const coalesceInflight = 4

type insertCall struct {
	params []store.InsertParams
	res    []store.InsertResult
	err    error
	// group is set, and lead closed, when this call is to send the group it heads; done is
	// closed when its results are in.
	group      []*insertCall
	lead, done chan struct{}
}

// insert runs the call alone or with the calls that wait beside it, in the order they came.
func (c *coalescer) insert(ctx context.Context, params []store.InsertParams) ([]store.InsertResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // never sent
	}
	call := &insertCall{params: params, lead: make(chan struct{}), done: make(chan struct{})}
	c.mu.Lock()
	if c.inflight < c.limit {
		c.inflight++
		c.mu.Unlock()
		call.group = []*insertCall{call}
	} else {
		c.next = append(c.next, call)
		c.mu.Unlock()
		select {
		case <-call.done:
			return call.res, call.err
		case <-call.lead:
		case <-ctx.Done():
			if c.withdraw(call) {
				return nil, ctx.Err() // never sent
			}
			// Already in a group: as one of its jobs, or heading it for the others.
			select {
			case <-call.done:
				return call.res, call.err
			case <-call.lead:
			}
		}
	}
	c.send(ctx, call.group)
	c.mu.Lock()
	if len(c.next) == 0 {
		c.inflight--
	} else {
		next := c.take()
		next[0].group = next
		close(next[0].lead) // it sends the next group; this call returns now
	}
	c.mu.Unlock()
	return call.res, call.err
}

// withdraw takes a call that was not sent yet out of the queue.
func (c *coalescer) withdraw(call *insertCall) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.next {
		if x == call {
			c.next = append(c.next[:i:i], c.next[i+1:]...)
			return true
		}
	}
	return false
}

// take removes the waiting calls that fit one script, oldest first. c.mu is held.
func (c *coalescer) take() []*insertCall {
	n, jobs := 0, 0
	for n < len(c.next) && (n == 0 || jobs+len(c.next[n].params) <= insertChunk) {
		jobs += len(c.next[n].params)
		n++
	}
	group := c.next[:n:n]
	c.next = c.next[n:]
	return group
}

// send inserts the group's jobs in one script and hands each call its part. It is not bound
// to the leading call's context: the others wait on its result.
func (c *coalescer) send(ctx context.Context, group []*insertCall) {
	var all []store.InsertParams
	if len(group) == 1 {
		all = group[0].params
	} else {
		n := 0
		for _, g := range group {
			n += len(g.params)
		}
		all = make([]store.InsertParams, 0, n)
		for _, g := range group {
			all = append(all, g.params...)
		}
	}
	// A group of one is the caller's alone: its context bounds it, as any other call.
	sendCtx := ctx
	if len(group) > 1 {
		sendCtx = context.WithoutCancel(ctx)
	}
	res, err := c.do(sendCtx, all)
	for _, g := range group {
		if err != nil {
			g.err = err
		} else {
			g.res, res = res[:len(g.params):len(g.params)], res[len(g.params):]
		}
		close(g.done)
	}
}
