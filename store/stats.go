package store

import (
	"context"
	"time"
)

// StatsBuckets are the upper bounds of the histograms of Stats: a value falls in the first
// bucket whose bound it does not exceed, or in one last bucket past them all. They span a
// millisecond's start to an hour's run, about three to a decade, which puts a percentile read
// from the buckets within a factor of about 1.6 of the true one.
var StatsBuckets = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second,
	10 * time.Second, 30 * time.Second, time.Minute,
	5 * time.Minute, 15 * time.Minute, time.Hour,
}

// Stats is what one node counted in one minute for one queue and kind: the attempts that ended
// there, how long their jobs waited to start and how long they ran. Nodes count their own
// attempts and add them to the store every few seconds; a reader sums every node's rows, so
// that a dashboard served by any node shows the whole fleet, and no row is written by two nodes.
type Stats struct {
	Node   string    `json:"node"`
	Minute time.Time `json:"minute"` // the minute's start
	Queue  string    `json:"queue"`
	Kind   string    `json:"kind"`
	// Attempts that ended: completed, failed and to be retried, discarded, cancelled.
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
	Discarded int64 `json:"discarded"`
	Cancelled int64 `json:"cancelled"`
	// Latency counts the attempts that started, by how long the job waited (from its insert, or
	// its run-at when later), and Duration the attempts that ended, by how long they ran: one
	// count per bucket of StatsBuckets and one past them (len(StatsBuckets)+1), or nil for none.
	Latency  []int64 `json:"latency,omitempty"`
	Duration []int64 `json:"duration,omitempty"`
}

// StatsKeeper keeps the fleet's per-minute counts (Stats). Every store of rota implements it.
type StatsKeeper interface {
	// AddStats adds each row to the store's row of the same node, minute, queue and kind (or
	// inserts it): counts are summed, histograms summed bucket by bucket (the shorter padded
	// with zeros). A call adds all of its rows or none.
	AddStats(ctx context.Context, rows []Stats) error
	// Stats returns every node's rows of minutes at or after since, in no particular order.
	Stats(ctx context.Context, since time.Time) ([]Stats, error)
	// PruneStats deletes the rows of minutes before before and returns how many.
	PruneStats(ctx context.Context, before time.Time) (int, error)
}

// StatsBucket is the index in a histogram of Stats of duration d.
func StatsBucket(d time.Duration) int {
	for i, b := range StatsBuckets {
		if d <= b {
			return i
		}
	}
	return len(StatsBuckets)
}

// Add adds o's counts and histograms to s's; s keeps its node, minute, queue and kind.
func (s *Stats) Add(o Stats) {
	s.Completed += o.Completed
	s.Failed += o.Failed
	s.Discarded += o.Discarded
	s.Cancelled += o.Cancelled
	s.Latency = addBuckets(s.Latency, o.Latency)
	s.Duration = addBuckets(s.Duration, o.Duration)
}

// addBuckets returns a + b bucket by bucket, in a when it is long enough.
func addBuckets(a, b []int64) []int64 {
	if len(a) < len(b) {
		a = append(a, make([]int64, len(b)-len(a))...)
	}
	for i, v := range b {
		a[i] += v
	}
	return a
}

// MergeStats adds up the rows of the same node, minute, queue and kind, so that one call of
// AddStats names each once; a reader that blanks the fields it does not group by (Node, to sum
// the fleet) gets its sums from it too. Order follows each key's first row.
func MergeStats(rows []Stats) []Stats {
	type key struct {
		node, queue, kind string
		minute            int64
	}
	at := make(map[key]int, len(rows))
	out := make([]Stats, 0, len(rows))
	for _, r := range rows {
		k := key{r.Node, r.Queue, r.Kind, r.Minute.UnixNano()}
		if i, ok := at[k]; ok {
			out[i].Add(r)
			continue
		}
		at[k] = len(out)
		r.Latency = append([]int64(nil), r.Latency...)
		r.Duration = append([]int64(nil), r.Duration...)
		out = append(out, r)
	}
	return out
}
