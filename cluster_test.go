package rota

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/pgtest"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/postgres"
	"github.com/rotahq/rota/store/sqlite"
)

// Cluster tests run several real nodes in one process, each with its own connection pool on one
// real store, as separate processes would; they run on the real clock because jobs really run.

// opener returns a new handle on one shared store each time it is called.
type opener func(t *testing.T) store.Store

func clusterStores(t *testing.T) map[string]opener {
	dir := t.TempDir()
	return map[string]opener{
		"sqlite": func(t *testing.T) store.Store {
			st, err := sqlite.Open(context.Background(), filepath.Join(dir, "rota.db"), sqlite.WithLogger(testLogger(t)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
		"postgres": func() opener {
			var url, schema string
			return func(t *testing.T) store.Store {
				if url == "" {
					url = pgtest.URL(t)
					schema = pgtest.Schema(t, url)
				}
				st, err := postgres.Open(context.Background(), url, postgres.WithSchema(schema), postgres.WithAutoMigrate(), postgres.WithLogger(testLogger(t)))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				return st
			}
		}(),
	}
}

// gauge tracks how many handlers run at once across every node, and the most seen.
type gauge struct {
	now, peak atomic.Int64
}

// enter counts a handler in and returns how many run now.
func (g *gauge) enter() int64 {
	n := g.now.Add(1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			return n
		}
	}
}

func (g *gauge) leave() { g.now.Add(-1) }

func startClusterNode(t *testing.T, st store.Store, id string, workers int, work func(context.Context, *Job[testArgs]) error) *Node {
	t.Helper()
	ws := NewWorkers()
	AddWorker(ws, WorkFunc[testArgs](work), nil)
	node, err := NewNode(Config{
		Store: st, Workers: ws, ID: id, Logger: testLogger(t),
		Queues: map[string]QueueConfig{"exports": {MaxWorkers: workers}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		node.Stop(ctx)
	})
	return node
}

func TestClusterWideLimitHoldsAcrossNodes(t *testing.T) {
	for name, open := range clusterStores(t) {
		t.Run(name, func(t *testing.T) {
			const (
				limit = 4
				jobs  = 120
				// took is each job's work, so that jobs overlap: a limit that let a fifth job
				// in would show.
				took = 20 * time.Millisecond
			)
			admin := NewClient(open(t), nil)
			ctx := context.Background()
			if err := admin.SetLimit(ctx, Limit{Scope: LimitQueue, Name: "exports", MaxRunning: limit}); err != nil {
				t.Fatal(err)
			}
			var g gauge
			var done sync.WaitGroup
			done.Add(jobs)
			// The first jobs wait until the limit's worth run at once, so that reaching the limit
			// does not depend on how the nodes' claims happen to overlap on a busy machine; a
			// limit that never lets that many run holds them 10 s, and the peak says so.
			full := make(chan struct{})
			var fullOnce sync.Once
			work := func(ctx context.Context, j *Job[testArgs]) error {
				if g.enter() >= limit {
					fullOnce.Do(func() { close(full) })
				}
				defer g.leave()
				defer done.Done()
				select {
				case <-full:
				case <-time.After(10 * time.Second):
					fullOnce.Do(func() { close(full) }) // the others need not wait too
				}
				time.Sleep(took)
				return nil
			}
			for _, id := range []string{"a", "b", "c"} {
				startClusterNode(t, open(t), id, 50, work)
			}
			batch := make([]InsertManyParams, jobs)
			for i := range batch {
				batch[i] = InsertManyParams{Args: testArgs{N: i}, Opts: &InsertOpts{Queue: "exports"}}
			}
			start := time.Now()
			if _, err := admin.InsertMany(ctx, batch); err != nil {
				t.Fatal(err)
			}
			finished := make(chan struct{})
			go func() { done.Wait(); close(finished) }()
			select {
			case <-finished:
			case <-time.After(60 * time.Second):
				t.Fatalf("jobs not done within 60s; peak concurrency %d", g.peak.Load())
			}
			elapsed := time.Since(start)
			if peak := g.peak.Load(); peak > limit {
				t.Fatalf("%d jobs ran at once across 3 nodes × 50 workers, over the limit of %d", peak, limit)
			} else if peak < limit {
				t.Fatalf("peak concurrency %d never reached the limit %d: the limit starves the cluster", peak, limit)
			}
			t.Logf("%d jobs of %v under a limit of %d: %.0f jobs/s (the limit allows at most %.0f)",
				jobs, took, limit, float64(jobs)/elapsed.Seconds(), limit/took.Seconds())
		})
	}
}
