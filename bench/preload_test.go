package bench

import (
	"context"
	"testing"

	"github.com/rotahq/rota/internal/pgtest"
	"github.com/rotahq/rota/store"
)

// Preloading leaves the queued jobs scheduled on the workload's queue and the retained ones
// completed, as the store's own counts see them, and reports the step's end.
func TestPreload(t *testing.T) {
	dir := t.TempDir()
	targets := map[string]func(t *testing.T) Target{
		"sqlite":   func(*testing.T) Target { return Rota("rota-sqlite", SQLite(dir)) },
		"postgres": func(t *testing.T) Target { return Rota("rota-postgres", Postgres(pgtest.URL(t))) },
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			inst, err := target(t).Open(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer inst.Close()
			var last [2]int
			cfg := Config{Queued: 25_000, Retained: 120_000, Progress: func(step string, done, total int) {
				if step == "preload" {
					last = [2]int{done, total}
				}
			}}
			if err := preload(t.Context(), inst, cfg); err != nil {
				t.Fatal(err)
			}
			if last != [2]int{145_000, 145_000} {
				t.Errorf("last progress report %v, want the whole step done", last)
			}
			counts := queueCounts(t.Context(), t, inst.(*rotaInstance).store)
			if counts[store.StateScheduled] != 25_000 || counts[store.StateCompleted] != 120_000 || len(counts) != 2 {
				t.Errorf("counts after preload: %v", counts)
			}
		})
	}
}

func queueCounts(ctx context.Context, t *testing.T, st store.Store) map[store.State]int64 {
	t.Helper()
	stats, err := st.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[store.State]int64{}
	for _, q := range stats {
		for state, n := range q.Counts {
			if n > 0 {
				counts[state] += n
			}
		}
	}
	return counts
}
