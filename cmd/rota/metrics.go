package main

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/metrics"
)

// serveMetrics exposes the node's metrics, and the Go runtime's, at http://addr/metrics. Call it
// before the node starts, so the first leadership event is counted. The returned function stops
// the listener.
func serveMetrics(ctx context.Context, node *rota.Node, addr string, logger *slog.Logger) (func(), error) {
	reg := prometheus.NewRegistry()
	c := metrics.New(node.Client(), logger)
	reg.MustRegister(c, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	bound, stopServer, err := startServer("--metrics-addr", addr, "metrics", &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, logger)
	if err != nil {
		return nil, err
	}
	// Inline, not through a channel: a channel drops events when full, and a dropped event is a
	// count lost for good (and an in-flight gauge that drifts).
	node.Handle(c.Observe)
	logger.Info("rota: metrics at http://" + bound + "/metrics")
	return stopServer, nil
}
