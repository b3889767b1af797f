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

	dto "github.com/prometheus/client_model/go"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store"
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
	node.Handle(c.Observe)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	// The test reads the node's events to know when it is done; the handler saw each before the
	// channel got it, so the metrics are up to date when the loop ends.
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
# HELP rota_queue_jobs Jobs in the store by queue and state, read at scrape time at most once every 15 s (cached in between), exported by the leader only.
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
	if v := testutil.ToFloat64(c.inFlight.WithLabelValues("default")); v != 0 {
		t.Fatalf("%v jobs in flight once all ended", v)
	}
	if n := histogramCount(t, c.startLatency.WithLabelValues("default", "ping")); n != 3 {
		t.Fatalf("start latency observed %d times for 3 jobs", n)
	}
	if n := histogramCount(t, c.claimSize.WithLabelValues("default")); n == 0 {
		t.Fatal("no claim observed")
	}
	if v := testutil.ToFloat64(c.serviceRuns.WithLabelValues(rota.ServiceRescuer, "ok")); v < 1 {
		t.Fatalf("rescuer runs %v: the node rescues as it starts", v)
	}
}

// TestMemoryFloorGauge feeds the events a node emits when its memory floor closes and opens.
func TestMemoryFloorGauge(t *testing.T) {
	c := New(nil, slog.New(slog.DiscardHandler))
	c.Observe(rota.Event{Type: rota.EventMemoryLow})
	if v := testutil.ToFloat64(c.memoryLow); v != 1 {
		t.Fatalf("memory low gauge %v after node.memory_low", v)
	}
	c.Observe(rota.Event{Type: rota.EventMemoryOK})
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

func histogramCount(t *testing.T, o prometheus.Observer) uint64 {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// Each kind of event moves its metric.
func TestEventsMoveTheirMetrics(t *testing.T) {
	c := New(nil, slog.New(slog.DiscardHandler))
	job := &rota.JobRow{}
	job.Queue, job.Kind = "mail", "send"
	c.Observe(rota.Event{Type: rota.EventJobClaimed, Queue: "mail", Claim: rota.ClaimSize{Asked: 10, Got: 2}, Duration: time.Millisecond})
	c.Observe(rota.Event{Type: rota.EventJobStarted, Job: job, Latency: 2 * time.Second})
	c.Observe(rota.Event{Type: rota.EventJobStarted, Job: job, Latency: time.Second})
	if v := testutil.ToFloat64(c.inFlight.WithLabelValues("mail")); v != 2 {
		t.Fatalf("in flight %v after two starts", v)
	}
	c.Observe(rota.Event{Type: rota.EventJobFenceRefused, Job: job, Outcome: rota.StateCompleted})
	c.Observe(rota.Event{Type: rota.EventJobFailed, Job: job, Duration: time.Second})
	if v := testutil.ToFloat64(c.inFlight.WithLabelValues("mail")); v != 0 {
		t.Fatalf("in flight %v after both ended", v)
	}
	c.Observe(rota.Event{Type: rota.EventServiceRun, Service: rota.ServicePruner, Count: 7})
	c.Observe(rota.Event{Type: rota.EventServiceRun, Service: rota.ServicePruner, Error: "down"})
	c.Observe(rota.Event{Type: rota.EventStoreError, Op: "claim", Queue: "mail", Error: "down"})
	c.Observe(rota.Event{Type: rota.EventJobAbandoned, Job: job, Error: "timeout"})
	c.Observe(rota.Event{Type: rota.EventDrainDeadline, Count: 3})
	for name, got := range map[string]float64{
		"abandoned attempts":        testutil.ToFloat64(c.abandoned.WithLabelValues("mail", "send")),
		"drained past the deadline": testutil.ToFloat64(c.drainDeadline) - 2,
		"fence refused":             testutil.ToFloat64(c.fenceRefused.WithLabelValues("mail", "send")),
		"failed attempts":           testutil.ToFloat64(c.attempts.WithLabelValues("mail", "send", "failed")),
		"pruner runs ok":            testutil.ToFloat64(c.serviceRuns.WithLabelValues(rota.ServicePruner, "ok")),
		"pruner runs failed":        testutil.ToFloat64(c.serviceRuns.WithLabelValues(rota.ServicePruner, "error")),
		"claim store errors":        testutil.ToFloat64(c.storeErrors.WithLabelValues("claim")),
		"pruned jobs (over 7)":      testutil.ToFloat64(c.serviceCount.WithLabelValues(rota.ServicePruner)) - 6,
	} {
		if got != 1 {
			t.Errorf("%s: %v, want 1", name, got)
		}
	}
	for name, h := range map[string]prometheus.Observer{
		"claim size":     c.claimSize.WithLabelValues("mail"),
		"claim duration": c.claimDuration.WithLabelValues("mail"),
		"start latency":  c.startLatency.WithLabelValues("mail", "send"),
		"duration":       c.duration.WithLabelValues("mail", "send"),
	} {
		if histogramCount(t, h) == 0 {
			t.Errorf("%s observed nothing", name)
		}
	}
}

// countingStore counts QueueStats calls.
type countingStore struct {
	*sqlite.Store
	calls int
}

func (s *countingStore) QueueStats(ctx context.Context) ([]store.QueueStats, error) {
	s.calls++
	return s.Store.QueueStats(ctx)
}

// Only the leader reads queue counts, and scrapes within QueueStatsEvery of a read serve its counts:
// the store is counted neither per scrape nor per node.
func TestQueueCountsAreReadOncePerInterval(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "rota.db"), sqlite.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	counting := &countingStore{Store: st}
	c := New(rota.NewClient(counting, nil), slog.New(slog.DiscardHandler))
	now := time.Now()
	c.queues.now = func() time.Time { return now }
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	// A node that does not lead reads no counts: the leader's are the fleet's.
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
	if counting.calls != 0 {
		t.Fatalf("a follower's scrape read the store %d times", counting.calls)
	}
	c.Observe(rota.Event{Type: rota.EventLeaderElected})
	for range 3 {
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	}
	if counting.calls != 1 {
		t.Fatalf("3 scrapes within the interval read the store %d times", counting.calls)
	}
	now = now.Add(QueueStatsEvery)
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
	if counting.calls != 2 {
		t.Fatalf("a scrape after the interval did not read again (%d reads)", counting.calls)
	}
	c.Observe(rota.Event{Type: rota.EventLeaderLost})
	now = now.Add(QueueStatsEvery)
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
	if counting.calls != 2 {
		t.Fatalf("a scrape after leadership ended read the store (%d reads)", counting.calls)
	}
}
