package rota

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/fleetstats"
)

// A node counts its attempts per minute, queue and kind, adds them to the store every
// StatsInterval, and once more when it stops: what a dashboard of any node sums.
func TestNodeAddsItsCountsToTheStore(t *testing.T) {
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error {
		if j.Args.N == 1 {
			return errors.New("boom")
		}
		return nil
	}, nil)
	b.insert(t, testArgs{}, nil)
	b.insert(t, testArgs{}, nil)
	b.insert(t, testArgs{N: 1}, &InsertOpts{MaxAttempts: 1})
	ended := map[EventType]int{}
	for ended[EventJobCompleted] < 2 || ended[EventJobDiscarded] < 1 {
		ev := recv(t, b.events)
		ended[ev.Type]++
	}
	b.clock.Advance(StatsIntervalDefault)
	for {
		ev := b.event(t, EventServiceRun)
		if ev.Service == ServiceStats && ev.Count > 0 {
			if ev.Error != "" {
				t.Fatalf("stats run failed: %s", ev.Error)
			}
			break
		}
	}
	rows, err := b.store.Stats(t.Context(), epoch.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	s := fleetstats.Summarize(rows, b.clock.Now(), 60)
	if len(s.Kinds) != 1 || s.Kinds[0].Name != "test" {
		t.Fatalf("kinds = %+v, want the one kind run", s.Kinds)
	}
	k := s.Kinds[0]
	if k.Completed != 2 || k.Discarded != 1 || k.Latency.Count != 3 || k.Duration.Count != 3 {
		t.Fatalf("counts = %+v; want 2 completed and 1 discarded, 3 starts and 3 ends timed", k)
	}
	for _, r := range rows {
		if r.Node != "node-a" || r.Queue != QueueDefault {
			t.Errorf("row %+v: want node-a's, of queue %s", r, QueueDefault)
		}
	}

	// What ends after the last pass is written when the node stops.
	b.insert(t, testArgs{}, nil)
	b.event(t, EventJobCompleted)
	if err := b.node.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	rows, err = b.store.Stats(t.Context(), epoch.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got := fleetstats.Summarize(rows, b.clock.Now(), 60).Kinds[0].Completed; got != 3 {
		t.Fatalf("after stop: %d completed, want 3", got)
	}
}
