package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
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
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	reg := prometheus.NewRegistry()
	c := metrics.New(node.Client(), logger)
	reg.MustRegister(c, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	events, unsubscribe := node.Subscribe(1024)
	runCtx, cancel := context.WithCancel(ctx)
	go c.Run(runCtx, events)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("rota: metrics server failed", "error", err)
		}
	}()
	logger.Info("rota: metrics at http://" + ln.Addr().String() + "/metrics")
	return func() {
		shutdownCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		_ = srv.Shutdown(shutdownCtx)
		cancel()
		unsubscribe()
	}, nil
}
