// Package metrics exports what a node does as Prometheus metrics: counters, gauges and histograms
// built from the node's events, and the store's queue counts. Register a Collector with the node's
// synchronous handler (Node.Handle(c.Observe)) so that no event goes uncounted; Run on a Subscribe
// channel also works, but misses events when the channel is full.
package metrics

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/internal/chanloop"
)

// Collector holds a node's metrics. Register it with a prometheus.Registerer, then feed it the
// node's events with Observe (as a Node.Handle handler) or Run.
type Collector struct {
	attempts      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	rescued       *prometheus.CounterVec
	fenceRefused  *prometheus.CounterVec
	inFlight      *prometheus.GaugeVec
	startLatency  *prometheus.HistogramVec
	claimSize     *prometheus.HistogramVec
	claimDuration *prometheus.HistogramVec
	serviceRuns   *prometheus.CounterVec
	serviceCount  *prometheus.CounterVec
	storeErrors   *prometheus.CounterVec
	abandoned     *prometheus.CounterVec
	drainDeadline prometheus.Counter
	leader        prometheus.Gauge
	memoryLow     prometheus.Gauge
	queues        *queueGauges

	// mu serialises Observe: Run and a handler may both feed the collector, and inFlight's
	// increments and decrements must not interleave with another event's.
	mu sync.Mutex
}

// New returns a Collector whose queue gauges are read through client (at most once per
// QueueStatsEvery; nil leaves them out).
func New(client *rota.Client, logger *slog.Logger) *Collector {
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	seconds := prometheus.ExponentialBuckets(0.001, 4, 10) // 1 ms … ~4.4 min
	return &Collector{
		attempts: counter("rota_job_attempts_total",
			"Attempts this node ended, by queue, kind and outcome (completed, failed, discarded, cancelled, snoozed, handed_back).",
			"queue", "kind", "outcome"),
		duration: histogram("rota_job_duration_seconds", "How long attempts ran on this node, by queue and kind.",
			seconds, "queue", "kind"),
		rescued: counter("rota_jobs_rescued_total",
			"Jobs whose lease expired and that this node's rescuer returned to their queue or discarded.", "queue", "kind"),
		fenceRefused: counter("rota_job_fence_refused_total",
			"Outcomes of this node the store refused because the job's lease had lapsed and it was claimed again.", "queue", "kind"),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rota_jobs_in_flight",
			Help: "Jobs this node has started and whose outcome is not yet recorded, by queue."}, []string{"queue"}),
		startLatency: histogram("rota_job_start_latency_seconds",
			"How long jobs waited to start on this node: from insert, or from their run-at when later, by queue and kind.",
			seconds, "queue", "kind"),
		claimSize: histogram("rota_claim_size", "Jobs one claim of this node got, by queue.",
			[]float64{0, 1, 2, 5, 10, 20, 50, 100, 200, 500}, "queue"),
		claimDuration: histogram("rota_claim_duration_seconds", "How long one claim of this node took, by queue.",
			prometheus.ExponentialBuckets(0.0005, 4, 8), "queue"),
		serviceRuns: counter("rota_service_runs_total",
			"Runs of this node's maintenance services (rescuer, pruner, cron, registry, tidier, stats), by service and result (ok, error).",
			"service", "result"),
		serviceCount: counter("rota_service_items_total",
			"What this node's maintenance services did: jobs rescued (rescuer), jobs pruned (pruner), occurrences planned (cron), rows of counts written (stats).",
			"service"),
		storeErrors: counter("rota_store_errors_total", "Failed store calls of this node's own loops, by operation.", "op"),
		abandoned: counter("rota_job_abandoned_total",
			"Attempts whose handler ignored its cancelled context past the grace period and was left running, by queue and kind.",
			"queue", "kind"),
		drainDeadline: prometheus.NewCounter(prometheus.CounterOpts{Name: "rota_node_drain_deadline_jobs_total",
			Help: "Jobs still running when a stop's deadline passed, cancelled and handed back."}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rota_node_leader",
			Help: "1 while this node is the leader.",
		}),
		memoryLow: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rota_node_memory_low",
			Help: "1 while available memory is below the node's floor and it takes no new jobs.",
		}),
		queues: newQueueGauges(client, logger),
	}
}

// Run updates the metrics from events until the channel closes or ctx ends.
func (c *Collector) Run(ctx context.Context, events <-chan rota.Event) {
	chanloop.Each(ctx, events, c.Observe)
}

// Observe updates the metrics from one event. It is fast and never blocks: pass it to
// Node.Handle before the node starts.
func (c *Collector) Observe(ev rota.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch ev.Type {
	case rota.EventLeaderElected:
		c.leader.Set(1)
		c.queues.leading.Store(true)
	case rota.EventLeaderLost:
		c.leader.Set(0)
		c.queues.leading.Store(false)
	case rota.EventMemoryLow:
		c.memoryLow.Set(1)
	case rota.EventMemoryOK:
		c.memoryLow.Set(0)
	case rota.EventJobRescued:
		c.rescued.WithLabelValues(ev.Job.Queue, ev.Job.Kind).Inc()
	case rota.EventJobClaimed:
		c.claimSize.WithLabelValues(ev.Queue).Observe(float64(ev.Claim.Got))
		c.claimDuration.WithLabelValues(ev.Queue).Observe(ev.Duration.Seconds())
	case rota.EventJobStarted:
		c.inFlight.WithLabelValues(ev.Job.Queue).Inc()
		c.startLatency.WithLabelValues(ev.Job.Queue, ev.Job.Kind).Observe(ev.Latency.Seconds())
	case rota.EventJobFenceRefused:
		c.inFlight.WithLabelValues(ev.Job.Queue).Dec()
		c.fenceRefused.WithLabelValues(ev.Job.Queue, ev.Job.Kind).Inc()
	case rota.EventJobCompleted, rota.EventJobFailed, rota.EventJobDiscarded, rota.EventJobCancelled,
		rota.EventJobSnoozed, rota.EventJobHandedBack:
		c.inFlight.WithLabelValues(ev.Job.Queue).Dec()
		outcome := strings.TrimPrefix(string(ev.Type), "job.")
		c.attempts.WithLabelValues(ev.Job.Queue, ev.Job.Kind, outcome).Inc()
		c.duration.WithLabelValues(ev.Job.Queue, ev.Job.Kind).Observe(ev.Duration.Seconds())
	case rota.EventServiceRun:
		result := "ok"
		if ev.Error != "" {
			result = "error"
		}
		c.serviceRuns.WithLabelValues(ev.Service, result).Inc()
		if ev.Count > 0 {
			c.serviceCount.WithLabelValues(ev.Service).Add(float64(ev.Count))
		}
	case rota.EventStoreError:
		c.storeErrors.WithLabelValues(ev.Op).Inc()
	case rota.EventJobAbandoned:
		c.abandoned.WithLabelValues(ev.Job.Queue, ev.Job.Kind).Inc()
	case rota.EventDrainDeadline:
		c.drainDeadline.Add(float64(ev.Count))
	}
}

func (c *Collector) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.attempts, c.duration, c.rescued, c.fenceRefused, c.inFlight, c.startLatency,
		c.claimSize, c.claimDuration, c.serviceRuns, c.serviceCount, c.storeErrors, c.abandoned, c.drainDeadline,
		c.leader, c.memoryLow}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.collectors() {
		m.Describe(ch)
	}
	ch <- c.queues.desc
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.collectors() {
		m.Collect(ch)
	}
	c.queues.collect(ch)
}
