// Package metrics exports what a node does as Prometheus metrics: counters and durations built from
// the node's events (Node.Subscribe), and the store's queue counts read at each scrape. It adds
// nothing to the runtime's hot path: a missed event costs a count, never a job.
package metrics

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/internal/chanloop"
)

// Collector holds a node's metrics. Register it with a prometheus.Registerer, then Run it on the
// node's events.
type Collector struct {
	client *rota.Client
	logger *slog.Logger

	attempts  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	rescued   *prometheus.CounterVec
	leader    prometheus.Gauge
	memoryLow prometheus.Gauge
	queueJobs *prometheus.Desc
}

// New returns a Collector whose queue gauges are read through client at each scrape.
func New(client *rota.Client, logger *slog.Logger) *Collector {
	return &Collector{
		client: client,
		logger: logger,
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rota_job_attempts_total",
			Help: "Attempts this node ended, by queue, kind and outcome (completed, failed, discarded, cancelled, snoozed, handed_back).",
		}, []string{"queue", "kind", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rota_job_duration_seconds",
			Help:    "How long attempts ran on this node, by queue and kind.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10), // 1 ms … ~4.4 min
		}, []string{"queue", "kind"}),
		rescued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rota_jobs_rescued_total",
			Help: "Jobs whose lease expired and that this node, as leader, returned to their queue or discarded.",
		}, []string{"queue", "kind"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rota_node_leader",
			Help: "1 while this node is the leader.",
		}),
		memoryLow: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rota_node_memory_low",
			Help: "1 while available memory is below the node's floor and it takes no new jobs.",
		}),
		queueJobs: prometheus.NewDesc("rota_queue_jobs", "Jobs in the store by queue and state, read at scrape time.",
			[]string{"queue", "state"}, nil),
	}
}

// Run updates the metrics from events until the channel closes or ctx ends.
func (c *Collector) Run(ctx context.Context, events <-chan rota.Event) {
	chanloop.Each(ctx, events, c.observe)
}

func (c *Collector) observe(ev rota.Event) {
	switch ev.Type {
	case rota.EventLeaderElected:
		c.leader.Set(1)
	case rota.EventLeaderLost:
		c.leader.Set(0)
	case rota.EventMemoryLow:
		c.memoryLow.Set(1)
	case rota.EventMemoryOK:
		c.memoryLow.Set(0)
	case rota.EventJobRescued:
		c.rescued.WithLabelValues(ev.Job.Queue, ev.Job.Kind).Inc()
	default:
		if ev.Job == nil || !strings.HasPrefix(string(ev.Type), "job.") {
			return
		}
		outcome := strings.TrimPrefix(string(ev.Type), "job.")
		c.attempts.WithLabelValues(ev.Job.Queue, ev.Job.Kind, outcome).Inc()
		c.duration.WithLabelValues(ev.Job.Queue, ev.Job.Kind).Observe(ev.Duration.Seconds())
	}
}

// scrapeTimeout bounds the store read of one scrape.
const scrapeTimeout = 5 * time.Second

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	c.attempts.Describe(ch)
	c.duration.Describe(ch)
	c.rescued.Describe(ch)
	c.leader.Describe(ch)
	c.memoryLow.Describe(ch)
	ch <- c.queueJobs
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.attempts.Collect(ch)
	c.duration.Collect(ch)
	c.rescued.Collect(ch)
	c.leader.Collect(ch)
	c.memoryLow.Collect(ch)
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	stats, err := c.client.QueueStats(ctx)
	if err != nil {
		c.logger.Warn("rota: metrics: reading queue counts failed", "error", err)
		return
	}
	for _, s := range stats {
		for state, n := range s.Counts {
			ch <- prometheus.MustNewConstMetric(c.queueJobs, prometheus.GaugeValue, float64(n), s.Queue, string(state))
		}
	}
}
