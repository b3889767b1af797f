package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

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
// every command that reads or steers jobs. Such a command never creates a store: run in the
// wrong directory, it would otherwise make an empty SQLite file there and report no jobs.
func (a *app) withClient(cmd *cobra.Command, fn func(client *rota.Client) error) error {
	if err := a.needStore(); err != nil {
		return err
	}
	return a.withClientCreating(cmd, fn)
}

// withClientCreating is withClient for the commands that may be the first to use a store
// (adding a schedule): a SQLite file is created and migrated as by `rota serve`.
func (a *app) withClientCreating(cmd *cobra.Command, fn func(client *rota.Client) error) error {
	client, closeStore, err := a.client(cmd.Context())
	if err != nil {
		return err
	}
	defer closeStore()
	return fn(client)
}

// needStore refuses a SQLite store whose file does not exist. Stores on a server are never
// created by opening them (they are migrated by `rota migrate`), so only SQLite needs it.
func (a *app) needStore() error {
	loc, err := storeurl.Parse(a.storeURL)
	if err != nil || loc.Kind != storeurl.SQLite {
		return nil // Open reports a bad URL in its own words
	}
	if _, err := os.Stat(filepath.Dir(loc.Path)); err != nil {
		return nil // Open says the directory is missing
	}
	if _, err := os.Stat(loc.Path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no store at %s: `rota serve` or `rota migrate` creates one there, or name another with --store", loc)
	}
	return nil
}
