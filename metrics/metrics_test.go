package metrics

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store/sqlite"
)

type pingArgs struct{}

func (pingArgs) Kind() string { return "ping" }

// A real node on a real store runs jobs; the metrics count them from its events, and the queue
// gauges read the store.
func TestMetricsFollowANode(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "rota.db"), sqlite.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ws := rota.NewWorkers()
	rota.AddWorker(ws, rota.WorkFunc[pingArgs](func(ctx context.Context, j *rota.Job[pingArgs]) error { return nil }), nil)
	node, err := rota.NewNode(rota.Config{Store: st, Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	events, unsubscribe := node.Subscribe(100)
	defer unsubscribe()
	c := New(node.Client(), slog.New(slog.DiscardHandler))
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	// The test reads the node's events to know when it is done, and hands each to the collector
	// as Run would, so the metrics are up to date when the loop ends.
	if err := node.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer node.Stop(ctx)
	for range 3 {
		if _, err := node.Client().Insert(ctx, pingArgs{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := node.Client().Insert(ctx, pingArgs{}, &rota.InsertOpts{RunAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	completed, led := 0, false
	for deadline := time.After(10 * time.Second); completed < 3 || !led; {
		select {
		case ev := <-events:
			c.observe(ev)
			completed += map[bool]int{true: 1}[ev.Type == rota.EventJobCompleted]
			led = led || ev.Type == rota.EventLeaderElected
		case <-deadline:
			t.Fatalf("after 10s: %d completed, leader %v", completed, led)
		}
	}
	want := `
# HELP rota_job_attempts_total Attempts this node ended, by queue, kind and outcome (completed, failed, discarded, cancelled, snoozed, handed_back).
# TYPE rota_job_attempts_total counter
rota_job_attempts_total{kind="ping",outcome="completed",queue="default"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "rota_job_attempts_total"); err != nil {
		t.Fatal(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP rota_node_leader 1 while this node is the leader.
# TYPE rota_node_leader gauge
rota_node_leader 1
`), "rota_node_leader"); err != nil {
		t.Fatal(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP rota_queue_jobs Jobs in the store by queue and state, read at scrape time.
# TYPE rota_queue_jobs gauge
rota_queue_jobs{queue="default",state="available"} 0
rota_queue_jobs{queue="default",state="cancelled"} 0
rota_queue_jobs{queue="default",state="completed"} 3
rota_queue_jobs{queue="default",state="discarded"} 0
rota_queue_jobs{queue="default",state="expired"} 0
rota_queue_jobs{queue="default",state="pending"} 0
rota_queue_jobs{queue="default",state="retryable"} 0
rota_queue_jobs{queue="default",state="running"} 0
rota_queue_jobs{queue="default",state="scheduled"} 1
`), "rota_queue_jobs"); err != nil {
		t.Fatal(err)
	}
}

// TestMemoryFloorGauge feeds the events a node emits when its memory floor closes and opens.
func TestMemoryFloorGauge(t *testing.T) {
	c := New(nil, slog.New(slog.DiscardHandler))
	c.observe(rota.Event{Type: rota.EventMemoryLow})
	if v := testutil.ToFloat64(c.memoryLow); v != 1 {
		t.Fatalf("memory low gauge %v after node.memory_low", v)
	}
	c.observe(rota.Event{Type: rota.EventMemoryOK})
	if v := testutil.ToFloat64(c.memoryLow); v != 0 {
		t.Fatalf("memory low gauge %v after node.memory_ok", v)
	}
}

// Run feeds the collector until its channel closes.
func TestRunConsumesEventsUntilClosed(t *testing.T) {
	c := New(nil, slog.New(slog.DiscardHandler))
	events := make(chan rota.Event, 2)
	events <- rota.Event{Type: rota.EventLeaderElected}
	events <- rota.Event{Type: rota.EventMemoryLow}
	close(events)
	c.Run(context.Background(), events)
	if testutil.ToFloat64(c.leader) != 1 || testutil.ToFloat64(c.memoryLow) != 1 {
		t.Fatalf("leader %v, memory low %v after Run", testutil.ToFloat64(c.leader), testutil.ToFloat64(c.memoryLow))
	}
}
