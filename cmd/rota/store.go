package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/internal/storeurl"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/postgres"
	"github.com/spf13/cobra"
)

// openStore opens the store named by --store, logging through logger, and checks that its schema
// is up to date: a PostgreSQL store is migrated by `rota migrate`, not by whoever opens it.
func (a *app) openStore(ctx context.Context, logger *slog.Logger) (store.Store, error) {
	st, err := storeurl.Open(ctx, a.storeURL, storeurl.WithLogger(logger))
	if err != nil {
		return nil, err
	}
	if pg, ok := st.(*postgres.Store); ok {
		pending, err := pg.PendingMigrations(ctx)
		if err == nil && len(pending) > 0 {
			err = fmt.Errorf("the schema of %s is at version %d and this build needs %d: run `rota migrate` first",
				a.storeName(), pending[0].Version-1, pending[len(pending)-1].Version)
		}
		if err != nil {
			st.Close()
			return nil, err
		}
	}
	return st, nil
}

// quietLogger is the logger of commands other than serve: they report to the person at the
// terminal through their output, so only the store's and runtime's warnings get through.
func (a *app) quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// client opens the store and returns a Client on it, and a function that closes the store.
func (a *app) client(ctx context.Context) (*rota.Client, func(), error) {
	logger := a.quietLogger()
	tp, flush, err := setupTracing(ctx, logger)
	if err != nil {
		return nil, nil, err
	}
	st, err := a.openStore(ctx, logger)
	if err != nil {
		flush()
		return nil, nil, err
	}
	return rota.NewClient(st, &rota.ClientConfig{Logger: logger, TracerProvider: tp}), func() {
		closeStore(st, logger)
		flush()
	}, nil
}

// closeStore closes st, logging what fails: the command's work is done by then.
func closeStore(st store.Store, logger *slog.Logger) {
	if err := st.Close(); err != nil {
		logger.Warn("rota: closing the store", "error", err)
	}
}

// storeName is --store as it may be shown: without a password.
func (a *app) storeName() string {
	loc, err := storeurl.Parse(a.storeURL)
	if err != nil {
		return a.storeURL
	}
	return loc.String()
}

// withClient opens the store, runs fn with a Client on it, and closes the store: the frame of
// every command that reads or steers jobs.
func (a *app) withClient(cmd *cobra.Command, fn func(client *rota.Client) error) error {
	client, closeStore, err := a.client(cmd.Context())
	if err != nil {
		return err
	}
	defer closeStore()
	return fn(client)
}
