package metrics

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store"
)

// QueueStatsEvery is how long the queue counts of one read serve scrapes. On PostgreSQL,
// QueueStats counts the jobs table (a GROUP BY over it): a node scraped every few seconds would
// otherwise scan it that often. SQLite and Redis keep counters, for which this only bounds
// staleness. Only the leader reads them at all (see queueGauges).
const QueueStatsEvery = 15 * time.Second

// scrapeTimeout bounds the store read of one scrape.
const scrapeTimeout = 5 * time.Second

// queueGauges reports the store's jobs by queue and state, read at most once per QueueStatsEvery,
// on the leader only: the counts are the fleet's, the same from every node, so one node reads
// them for all, and a fleet of fifty nodes does not count the table fifty times an interval. A
// query that sums or takes the max over nodes gets the fleet's figure.
type queueGauges struct {
	client *rota.Client
	logger *slog.Logger
	desc   *prometheus.Desc
	now    func() time.Time
	// leading is set while the node the collector follows leads (leader.elected, leader.lost).
	leading atomic.Bool

	mu    sync.Mutex
	read  time.Time
	stats []store.QueueStats
}

func newQueueGauges(client *rota.Client, logger *slog.Logger) *queueGauges {
	return &queueGauges{client: client, logger: logger, now: time.Now,
		desc: prometheus.NewDesc("rota_queue_jobs",
			"Jobs in the store by queue and state, read at scrape time at most once every 15 s (cached in between), exported by the leader only.",
			[]string{"queue", "state"}, nil)}
}

func (g *queueGauges) collect(ch chan<- prometheus.Metric) {
	if g.client == nil || !g.leading.Load() {
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
