package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/rotahq/rota"
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

// serveAPI serves the HTTP API on addr through client. The returned function stops it: new
// requests are refused, and running ones (a wait among them) get a few seconds to finish.
func serveAPI(client *rota.Client, addr, token string, noAuth bool, logger *slog.Logger) (func(), error) {
	if token == "" && !noAuth {
		return nil, fmt.Errorf("--http-addr needs an API token: set %s or --api-token-file (or --api-no-auth to serve without one)", apiTokenEnv)
	}
	h, err := httpapi.New(httpapi.Config{Client: client, Token: token, NoAuth: noAuth, Logger: logger})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http-addr %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		// A wait request blocks for up to httpapi.WaitMaxDefault before it answers.
		WriteTimeout: httpapi.WaitMaxDefault + 10*time.Second,
		IdleTimeout:  2 * time.Minute,
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("rota: HTTP API server failed", "error", err)
		}
	}()
	if noAuth {
		logger.Warn("rota: the HTTP API takes requests without a token; anyone who reaches it can run jobs", "addr", ln.Addr().String())
	}
	logger.Info("rota: HTTP API at http://" + ln.Addr().String() + "/v1/")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
	}, nil
}
