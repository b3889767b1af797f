package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/internal/webguard"
	"github.com/rotahq/rota/metrics"
)

// loopbackHostsOnly answers requests for localhost, loopback addresses and the server's own
// address only (webguard.Hosts), refusing others with 421 Misdirected Request.
func loopbackHostsOnly(next http.Handler) http.Handler {
	hosts, _ := webguard.NewHosts(nil) // no names to parse: cannot fail
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hosts.Allowed(r) {
			http.Error(w, fmt.Sprintf("Host %q is not served: metrics on a loopback address answer localhost and loopback addresses only, "+
				"so that a web page cannot read them through DNS rebinding", r.Host), http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serveMetrics exposes the node's metrics, and the Go runtime's, at http://addr/metrics. Call it
// before the node starts, so the first leadership event is counted. The returned function stops
// the listener.
func serveMetrics(ctx context.Context, node *rota.Node, addr string, logger *slog.Logger) (func(), error) {
	reg := prometheus.NewRegistry()
	c := metrics.New(node.Client(), logger)
	reg.MustRegister(c, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	var handler http.Handler = mux
	if checkLoopback(addr) == nil {
		// On a loopback address the scrapers are local and name it so: another Host is a web
		// page that reached it by DNS rebinding, reading the fleet's queues and kinds.
		handler = loopbackHostsOnly(mux)
	}
	bound, stopServer, err := startServer("--metrics-addr", addr, "metrics", &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}, logger)
	if err != nil {
		return nil, err
	}
	// Inline, not through a channel: a channel drops events when full, and a dropped event is a
	// count lost for good (and an in-flight gauge that drifts).
	node.Handle(c.Observe)
	logger.Info("rota: metrics at http://" + bound + "/metrics")
	return stopServer, nil
}
