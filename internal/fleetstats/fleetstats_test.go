package fleetstats

import (
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestCounterTakeAndReturn(t *testing.T) {
	c := NewCounter("n1")
	c.Started(t0.Add(5*time.Second), "q", "k", 3*time.Millisecond)
	c.Ended(t0.Add(6*time.Second), "q", "k", Completed, 40*time.Millisecond)
	c.Ended(t0.Add(61*time.Second), "q", "k", Failed, 2*time.Hour)
	rows := c.Take()
	if len(rows) != 2 {
		t.Fatalf("Take returned %d rows, want 2 (two minutes)", len(rows))
	}
	if again := c.Take(); len(again) != 0 {
		t.Fatalf("a second Take returned %v, want nothing", again)
	}
	c.Return(rows)
	c.Ended(t0.Add(7*time.Second), "q", "k", Discarded, time.Millisecond)
	got := store.MergeStats(c.Take())
	slices.SortFunc(got, func(a, b store.Stats) int { return a.Minute.Compare(b.Minute) })
	first := got[0]
	if first.Node != "n1" || !first.Minute.Equal(t0) || first.Completed != 1 || first.Discarded != 1 {
		t.Errorf("first minute = %+v", first)
	}
	if first.Latency[store.StatsBucket(3*time.Millisecond)] != 1 || first.Duration[store.StatsBucket(40*time.Millisecond)] != 1 ||
		first.Duration[0] != 1 {
		t.Errorf("first minute's histograms = %v, %v", first.Latency, first.Duration)
	}
	second := got[1]
	if !second.Minute.Equal(t0.Add(time.Minute)) || second.Failed != 1 || second.Duration[len(store.StatsBuckets)] != 1 {
		t.Errorf("second minute = %+v; two hours belong past the last bucket", second)
	}
}

func TestSummarizeSumsNodesAndKeepsTheWindow(t *testing.T) {
	h := func(i int) []int64 {
		b := make([]int64, len(store.StatsBuckets)+1)
		b[i] = 10
		return b
	}
	rows := []store.Stats{
		{Node: "a", Minute: t0, Queue: "q1", Kind: "k1", Completed: 3, Latency: h(0), Duration: h(3)},
		{Node: "b", Minute: t0, Queue: "q1", Kind: "k2", Completed: 4, Failed: 1, Latency: h(2)},
		{Node: "a", Minute: t0.Add(2 * time.Minute), Queue: "q2", Kind: "k1", Discarded: 2},
		{Node: "a", Minute: t0.Add(-10 * time.Minute), Queue: "q1", Kind: "k1", Completed: 100}, // before the window
	}
	s := Summarize(rows, t0.Add(2*time.Minute+30*time.Second), 3)
	if len(s.Minutes) != 3 || !s.Minutes[0].At.Equal(t0) {
		t.Fatalf("minutes = %+v, want three from %v", s.Minutes, t0)
	}
	if m := s.Minutes[0]; m.Completed != 7 || m.Failed != 1 {
		t.Errorf("first minute = %+v, want 7 completed and 1 failed of two nodes", m)
	}
	if m := s.Minutes[1]; m != (Minute{At: t0.Add(time.Minute)}) {
		t.Errorf("empty minute = %+v", m)
	}
	if len(s.Queues) != 2 || s.Queues[0].Name != "q1" || s.Queues[0].Completed != 7 || s.Queues[1].Discarded != 2 {
		t.Errorf("queues = %+v", s.Queues)
	}
	q1 := s.Queues[0].Latency
	if q1.Count != 20 || q1.P50 > store.StatsBuckets[0] || q1.P99 <= store.StatsBuckets[1] || q1.P99 > store.StatsBuckets[2] {
		t.Errorf("q1 start latency = %+v: half under 1ms, the rest in (2ms, 5ms]", q1)
	}
	if len(s.Kinds) != 2 || s.Kinds[0].Name != "k1" || s.Kinds[0].Completed != 3 || s.Kinds[0].Discarded != 2 {
		t.Errorf("kinds = %+v", s.Kinds)
	}
}

func TestQuantile(t *testing.T) {
	h := make([]int64, len(store.StatsBuckets)+1)
	if q := Quantile(h, 0.5); q != 0 {
		t.Errorf("empty histogram's median = %v, want 0", q)
	}
	h[1] = 100 // all in (1ms, 2ms]
	if q := Quantile(h, 0.5); q != 1500*time.Microsecond {
		t.Errorf("median = %v, want 1.5ms, halfway through the bucket", q)
	}
	h[len(store.StatsBuckets)] = 900
	if q := Quantile(h, 0.99); q != time.Hour {
		t.Errorf("p99 past the last bucket = %v, want its bound", q)
	}
}
