package metrics

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store"
)

// QueueStatsEvery is how long the queue counts of one read serve scrapes. On PostgreSQL,
// QueueStats counts the jobs table (a GROUP BY over it): every node scraped every few seconds would
// otherwise scan it that often, each. SQLite and Redis keep counters, for which this only bounds
// staleness.
const QueueStatsEvery = 15 * time.Second

// scrapeTimeout bounds the store read of one scrape.
const scrapeTimeout = 5 * time.Second

// queueGauges reports the store's jobs by queue and state, read at most once per QueueStatsEvery.
type queueGauges struct {
	client *rota.Client
	logger *slog.Logger
	desc   *prometheus.Desc
	now    func() time.Time

	mu    sync.Mutex
	read  time.Time
	stats []store.QueueStats
}

func newQueueGauges(client *rota.Client, logger *slog.Logger) *queueGauges {
	return &queueGauges{client: client, logger: logger, now: time.Now,
		desc: prometheus.NewDesc("rota_queue_jobs",
			"Jobs in the store by queue and state, read at scrape time at most once every 15 s (cached in between).",
			[]string{"queue", "state"}, nil)}
}

func (g *queueGauges) collect(ch chan<- prometheus.Metric) {
	if g.client == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if now := g.now(); g.read.IsZero() || now.Sub(g.read) >= QueueStatsEvery {
		ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
		stats, err := g.client.QueueStats(ctx)
		cancel()
		if err != nil {
			g.logger.Warn("rota: metrics: reading queue counts failed", "error", err)
			return
		}
		g.read, g.stats = now, stats
	}
	for _, s := range g.stats {
		for state, n := range s.Counts {
			ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(n), s.Queue, string(state))
		}
	}
}
