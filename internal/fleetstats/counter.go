// Package fleetstats counts a node's attempts per minute, for the node to add to its store
// (store.StatsKeeper) every few seconds, and sums the rows of every node for the readers that
// show the whole fleet: the dashboard and the HTTP API.
package fleetstats

import (
	"sync"
	"time"

	"github.com/rotahq/rota/store"
)

// Outcome is how an attempt ended, as the counts tell them apart.
type Outcome int

// Outcomes counted. Snoozed and handed-back attempts are not: the job's attempt did not end.
const (
	Completed Outcome = iota
	Failed            // the job will retry
	Discarded
	Cancelled
)

// Counter holds one node's counts not yet written to the store. It is safe for concurrent use.
type Counter struct {
	node string
	mu   sync.Mutex
	rows map[key]*store.Stats
}

type key struct {
	minute      int64
	queue, kind string
}

// NewCounter counts for the node of that id.
func NewCounter(node string) *Counter {
	return &Counter{node: node, rows: map[key]*store.Stats{}}
}

func (c *Counter) row(at time.Time, queue, kind string) *store.Stats {
	m := at.Truncate(time.Minute)
	k := key{m.UnixNano(), queue, kind}
	r := c.rows[k]
	if r == nil {
		r = &store.Stats{Node: c.node, Minute: m.UTC(), Queue: queue, Kind: kind}
		c.rows[k] = r
	}
	return r
}

// Started counts an attempt that started at at after its job waited latency.
func (c *Counter) Started(at time.Time, queue, kind string, latency time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.row(at, queue, kind)
	r.Latency = inc(r.Latency, store.StatsBucket(latency))
}

// Ended counts an attempt that ended at at, how, after running ran.
func (c *Counter) Ended(at time.Time, queue, kind string, how Outcome, ran time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.row(at, queue, kind)
	switch how {
	case Completed:
		r.Completed++
	case Failed:
		r.Failed++
	case Discarded:
		r.Discarded++
	case Cancelled:
		r.Cancelled++
	}
	r.Duration = inc(r.Duration, store.StatsBucket(ran))
}

// Take returns the counts held and forgets them: the caller adds them to the store, and gives
// them back (Return) if that fails.
func (c *Counter) Take() []store.Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]store.Stats, 0, len(c.rows))
	for k, r := range c.rows {
		out = append(out, *r)
		delete(c.rows, k)
	}
	return out
}

// Return adds back counts that Take returned and the store did not take.
func (c *Counter) Return(rows []store.Stats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range rows {
		c.row(r.Minute, r.Queue, r.Kind).Add(r)
	}
}

// inc adds one to bucket i of h, which it grows to hold every bucket.
func inc(h []int64, i int) []int64 {
	if h == nil {
		h = make([]int64, len(store.StatsBuckets)+1)
	}
	h[i]++
	return h
}
