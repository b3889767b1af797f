package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// startServer serves srv on addr in the background and returns the address it listens on (addr
// may ask for port 0) and a function that stops it: new requests are refused, and running ones
// get a few seconds to finish before their connections are closed. flag names addr's flag in
// errors; what names the server in logs.
func startServer(flag, addr, what string, srv *http.Server, logger *slog.Logger) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("%s %s: %w", flag, addr, err)
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("rota: "+what+" server failed", "error", err)
		}
	}()
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
	}, nil
}
