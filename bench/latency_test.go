package bench

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// recorder is an Instance that notes, in order, each insert as it is made and each job as its
// handler starts.
type recorder struct {
	Instance
	mu     sync.Mutex
	events []event
}

type event struct {
	start bool
	seq   int64
}

func (r *recorder) note(e event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) Insert(ctx context.Context, seq int64) error {
	r.note(event{seq: seq})
	return r.Instance.Insert(ctx, seq)
}

func (r *recorder) Workers(n int, h Hooks) (Runner, error) {
	started := h.Started
	h.Started = func(seq int64) {
		r.note(event{start: true, seq: seq})
		started(seq)
	}
	return r.Instance.Workers(n, h)
}

// TestLatencyWarmsUpFirst checks that the latency workload's warm-up jobs have all started
// before its first measured insert, and that only the measured jobs are counted.
func TestLatencyWarmsUpFirst(t *testing.T) {
	inst, err := Rota("rota-sqlite", SQLite(t.TempDir())).Open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	rec := &recorder{Instance: inst}
	cfg := Config{Workers: 10, Rate: 200, Duration: 200 * time.Millisecond, WarmUp: 150 * time.Millisecond}.WithDefaults()
	var res Result
	if err := latency(t.Context(), rec, cfg, &res); err != nil {
		t.Fatal(err)
	}
	if res.Jobs != 40 || res.Latency == nil || res.Latency.N != 40 {
		t.Fatalf("jobs %d, latency %+v: want 40 measured (200 jobs/s for 0.2 s)", res.Jobs, res.Latency)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	first := slices.IndexFunc(rec.events, func(e event) bool { return !e.start && e.seq >= 0 })
	if first < 0 {
		t.Fatal("no measured insert recorded")
	}
	var warmInserts, warmStarts []int64
	for _, e := range rec.events[:first] {
		if e.seq >= 0 {
			t.Fatalf("job %d started before the first measured insert", e.seq)
		}
		if e.start {
			warmStarts = append(warmStarts, e.seq)
		} else {
			warmInserts = append(warmInserts, e.seq)
		}
	}
	slices.Sort(warmStarts)
	warmStarts = slices.Compact(warmStarts)
	if len(warmInserts) != 30 || len(warmStarts) != 30 {
		t.Errorf("before the first measured insert: %d warm-up inserts and %d warm-up jobs started, want 30 each (200 jobs/s for 0.15 s)", len(warmInserts), len(warmStarts))
	}
}
