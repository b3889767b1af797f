package maintenance

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/internal/fleetstats"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "rota.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// statsOutage fails AddStats while out is set.
type statsOutage struct {
	*sqlite.Store
	out bool
}

func (s *statsOutage) AddStats(ctx context.Context, rows []store.Stats) error {
	if s.out {
		return store.ErrUnavailable
	}
	return s.Store.AddStats(ctx, rows)
}

// Counts the store refused are kept and written by the next pass that works.
func TestStatsKeepWhatTheStoreRefused(t *testing.T) {
	st := openStore(t)
	outage := &statsOutage{Store: st, out: true}
	var ops []string
	counts := fleetstats.NewCounter("n1")
	s := &Stats{Keeper: outage, Counts: counts, Failed: func(_ context.Context, op string, _ error) { ops = append(ops, op) }}
	counts.Ended(epoch, "q", "k", fleetstats.Completed, time.Millisecond)
	if _, err := s.Pass(t.Context()); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("pass during the outage: %v, want ErrUnavailable", err)
	}
	if len(ops) != 1 || ops[0] != "add_stats" {
		t.Fatalf("failures reported: %v, want one add_stats", ops)
	}
	if rows, _ := st.Stats(t.Context(), time.Time{}); len(rows) != 0 {
		t.Fatalf("rows written during the outage: %+v", rows)
	}
	outage.out = false
	if written, err := s.Pass(t.Context()); err != nil || written != 1 {
		t.Fatalf("pass after the outage: %d rows, %v", written, err)
	}
	rows, err := st.Stats(t.Context(), time.Time{})
	if err != nil || len(rows) != 1 || rows[0].Completed != 1 {
		t.Fatalf("after the outage: %+v (%v), want the one completed attempt", rows, err)
	}
}

// The runner reports each pass with what it did, and not a pass cut short by its context; Loop
// runs Last once when the context ends.
func TestRunnerReportsPassesAndRunsLast(t *testing.T) {
	clock := clockwork.NewFakeClockAt(epoch)
	var runs []Run
	r := Runner{Clock: clock, Report: func(run Run) { runs = append(runs, run) }}
	boom := errors.New("boom")
	r.Once(t.Context(), Service{Name: "a", Pass: func(context.Context) (int, error) { return 3, nil }})
	r.Once(t.Context(), Service{Name: "b", Pass: func(context.Context) (int, error) { return 0, boom }})
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	r.Once(cancelled, Service{Name: "c", Pass: func(ctx context.Context) (int, error) { return 0, ctx.Err() }})
	if len(runs) != 2 || runs[0] != (Run{Service: "a", Count: 3}) || runs[1].Service != "b" || !errors.Is(runs[1].Err, boom) {
		t.Fatalf("runs reported: %+v", runs)
	}

	ctx, stop := context.WithCancel(t.Context())
	passes, lasts := make(chan struct{}, 10), make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		r.Loop(ctx, Service{Name: "d", Every: time.Minute,
			Pass: func(context.Context) (int, error) { passes <- struct{}{}; return 0, nil },
			Last: func(context.Context) { lasts <- struct{}{} }})
		close(done)
	}()
	<-passes // at once
	if err := clock.BlockUntilContext(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	<-passes // after an interval
	stop()
	<-done
	select {
	case <-lasts:
	default:
		t.Fatal("Last did not run when the loop stopped")
	}
}

// The pruner deletes each final state past its own retention and keeps one set negative.
func TestPrunerKeepsEachStateItsRetention(t *testing.T) {
	st := openStore(t)
	ctx := t.Context()
	if _, err := st.Insert(ctx, []store.InsertParams{{Kind: "k", Queue: "q", Args: []byte(`{}`), MaxAttempts: 1}}); err != nil {
		t.Fatal(err)
	}
	jobs, err := st.Claim(ctx, store.ClaimParams{Queue: "q", Kinds: []string{"k"}, Max: 1, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v, %v", jobs, err)
	}
	if _, err := st.Complete(ctx, []store.Outcome{{ID: jobs[0].ID, Fence: jobs[0].Fence, State: store.StateCompleted}}); err != nil {
		t.Fatal(err)
	}
	later := func(context.Context) (time.Time, error) { return time.Now().Add(2 * time.Hour), nil }
	p := &Pruner{Jobs: st, Now: later, Failed: func(_ context.Context, op string, err error) { t.Errorf("%s: %v", op, err) },
		Retention: map[store.State]time.Duration{store.StateCompleted: -1}}
	if n, err := p.Pass(ctx); err != nil || n != 0 {
		t.Fatalf("kept forever: pruned %d (%v)", n, err)
	}
	p.Retention[store.StateCompleted] = time.Hour
	if n, err := p.Pass(ctx); err != nil || n != 1 {
		t.Fatalf("kept an hour, two hours on: pruned %d (%v), want 1", n, err)
	}
}

// The pruner deletes the fleet's counts older than their retention, judged by the store's clock,
// and keeps the rest; a negative retention keeps them all.
func TestPrunerDeletesCountsPastTheirRetention(t *testing.T) {
	st := openStore(t)
	ctx := t.Context()
	if err := st.AddStats(ctx, []store.Stats{
		{Node: "n1", Minute: epoch.Add(-25 * time.Hour), Queue: "q", Kind: "k", Completed: 1},
		{Node: "n1", Minute: epoch.Add(-time.Hour), Queue: "q", Kind: "k", Completed: 2},
	}); err != nil {
		t.Fatal(err)
	}
	storeNow := func(context.Context) (time.Time, error) { return epoch, nil }
	p := &Pruner{Jobs: st, Stats: st, Now: storeNow, StatsRetention: -1,
		Failed: func(_ context.Context, op string, err error) { t.Errorf("%s: %v", op, err) }}
	count := func() int {
		rows, err := st.Stats(ctx, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		return len(rows)
	}
	if _, err := p.Pass(ctx); err != nil || count() != 2 {
		t.Fatalf("kept forever: %d rows left (%v), want 2", count(), err)
	}
	p.StatsRetention = 24 * time.Hour
	if _, err := p.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := st.Stats(ctx, time.Time{})
	if err != nil || len(rows) != 1 || rows[0].Completed != 2 {
		t.Fatalf("kept a day: %+v (%v), want the row of an hour ago alone", rows, err)
	}
}
