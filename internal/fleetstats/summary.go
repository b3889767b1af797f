package fleetstats

import (
	"cmp"
	"slices"
	"time"

	"github.com/rotahq/rota/store"
)

// Summary is the fleet's last minutes: every node's rows summed per minute, and per queue and
// per kind over the whole window.
type Summary struct {
	// Minutes are the window's minutes, oldest first, empty ones included.
	Minutes []Minute `json:"minutes"`
	Queues  []Group  `json:"queues"`
	Kinds   []Group  `json:"kinds"`
}

// Minute is one minute of the fleet: the attempts that ended in it.
type Minute struct {
	At        time.Time `json:"at"`
	Completed int64     `json:"completed"`
	Failed    int64     `json:"failed"`
	Discarded int64     `json:"discarded"`
	Cancelled int64     `json:"cancelled"`
}

// Group is one queue's or kind's attempts over the window, with percentiles of how long its
// jobs waited to start and how long they ran.
type Group struct {
	Name      string      `json:"name"`
	Completed int64       `json:"completed"`
	Failed    int64       `json:"failed"`
	Discarded int64       `json:"discarded"`
	Cancelled int64       `json:"cancelled"`
	Latency   Percentiles `json:"start_latency"`
	Duration  Percentiles `json:"run_duration"`
}

// Percentiles are read from a histogram of store.StatsBuckets: within a bucket, values are
// taken to be spread evenly, and a percentile past the last bucket is given as its bound. Count
// is how many values the histogram holds; with none the percentiles are zero.
type Percentiles struct {
	Count int64         `json:"count"`
	P50   time.Duration `json:"p50_ns"`
	P95   time.Duration `json:"p95_ns"`
	P99   time.Duration `json:"p99_ns"`
}

// Summarize sums rows into the minutes of the window ending with the minute of end (window
// minutes long) and the groups of its queues and kinds. Rows outside the window are left out.
func Summarize(rows []store.Stats, end time.Time, window int) Summary {
	last := end.Truncate(time.Minute)
	first := last.Add(-time.Duration(window-1) * time.Minute)
	s := Summary{Minutes: make([]Minute, window)}
	for i := range s.Minutes {
		s.Minutes[i].At = first.Add(time.Duration(i) * time.Minute).UTC()
	}
	var queues, kinds []store.Stats
	for _, r := range rows {
		i := int(r.Minute.Sub(first) / time.Minute)
		if r.Minute.Before(first) || i >= window {
			continue
		}
		m := &s.Minutes[i]
		m.Completed += r.Completed
		m.Failed += r.Failed
		m.Discarded += r.Discarded
		m.Cancelled += r.Cancelled
		queues = append(queues, store.Stats{Queue: r.Queue, Completed: r.Completed, Failed: r.Failed,
			Discarded: r.Discarded, Cancelled: r.Cancelled, Latency: r.Latency, Duration: r.Duration})
		kinds = append(kinds, store.Stats{Kind: r.Kind, Completed: r.Completed, Failed: r.Failed,
			Discarded: r.Discarded, Cancelled: r.Cancelled, Latency: r.Latency, Duration: r.Duration})
	}
	s.Queues = groups(queues, func(r store.Stats) string { return r.Queue })
	s.Kinds = groups(kinds, func(r store.Stats) string { return r.Kind })
	return s
}

func groups(rows []store.Stats, name func(store.Stats) string) []Group {
	merged := store.MergeStats(rows)
	out := make([]Group, len(merged))
	for i, r := range merged {
		out[i] = Group{Name: name(r), Completed: r.Completed, Failed: r.Failed, Discarded: r.Discarded,
			Cancelled: r.Cancelled, Latency: percentiles(r.Latency), Duration: percentiles(r.Duration)}
	}
	slices.SortFunc(out, func(a, b Group) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func percentiles(h []int64) Percentiles {
	var p Percentiles
	for _, n := range h {
		p.Count += n
	}
	if p.Count == 0 {
		return p
	}
	p.P50, p.P95, p.P99 = Quantile(h, 0.50), Quantile(h, 0.95), Quantile(h, 0.99)
	return p
}

// Quantile is the q-quantile (0 < q ≤ 1) of a histogram of store.StatsBuckets.
func Quantile(h []int64, q float64) time.Duration {
	var total int64
	for _, n := range h {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var seen int64
	for i, n := range h {
		if n == 0 || float64(seen+n) < rank {
			seen += n
			continue
		}
		if i >= len(store.StatsBuckets) {
			return store.StatsBuckets[len(store.StatsBuckets)-1]
		}
		var lower time.Duration
		if i > 0 {
			lower = store.StatsBuckets[i-1]
		}
		upper := store.StatsBuckets[i]
		frac := (rank - float64(seen)) / float64(n)
		return lower + time.Duration(frac*float64(upper-lower))
	}
	return store.StatsBuckets[len(store.StatsBuckets)-1]
}
