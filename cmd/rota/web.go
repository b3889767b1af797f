package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/dashboard"
	"github.com/rotahq/rota/httpapi"
)

// apiTokenEnv names the environment variable that holds the HTTP API's token, for process
// managers that pass secrets that way; --api-token-file reads it from a file instead.
const apiTokenEnv = "ROTA_API_TOKEN"

// apiToken returns the API token from --api-token-file, else from ROTA_API_TOKEN.
func apiToken(file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--api-token-file: %w", err)
		}
		token := strings.TrimSpace(string(b))
		if token == "" {
			return "", fmt.Errorf("--api-token-file %s is empty", file)
		}
		return token, nil
	}
	return os.Getenv(apiTokenEnv), nil
}

// serveWeb serves, on addr, the HTTP API under /v1/ and the dashboard at /, both through the
// node's client (so a job cancelled there stops at once when this node runs it) and both behind
// token. The returned function stops it: new requests are refused, waits answer with the job as
// it is, and other running requests get a few seconds to finish.
func serveWeb(node *rota.Node, addr, token string, noAuth bool, logger *slog.Logger) (func(), error) {
	if token == "" && !noAuth {
		return nil, fmt.Errorf("--http-addr needs an API token: set %s or --api-token-file (or --api-no-auth to serve without one)", apiTokenEnv)
	}
	api, err := httpapi.New(httpapi.Config{Client: node.Client(), Token: token, NoAuth: noAuth, Logger: logger})
	if err != nil {
		return nil, err
	}
	dash, err := dashboard.New(dashboard.Config{Client: node.Client(), Node: node, Token: token, NoAuth: noAuth, Logger: logger})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", api)
	mux.Handle("/healthz", api)
	mux.Handle("/", dash)
	// Requests' contexts end when the server stops, so that a wait answers at once then.
	base, stopRequests := context.WithCancel(context.Background())
	srv := &http.Server{
		Handler:           mux,
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// A wait request blocks for up to httpapi.WaitMaxDefault before it answers.
		WriteTimeout: httpapi.WaitMaxDefault + 10*time.Second,
		IdleTimeout:  2 * time.Minute,
	}
	bound, stopServer, err := startServer("--http-addr", addr, "HTTP API", srv, logger)
	if err != nil {
		stopRequests()
		dash.Close()
		return nil, err
	}
	if noAuth {
		logger.Warn("rota: the HTTP API and dashboard take requests without a token; anyone who reaches them can run jobs", "addr", bound)
	}
	logger.Info("rota: HTTP API at http://" + bound + "/v1/, dashboard at http://" + bound + "/")
	return func() {
		stopRequests()
		stopServer()
		dash.Close()
	}, nil
}
