package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rotahq/rota/internal/storeurl"
	"github.com/rotahq/rota/store/postgres"
)

// migratePostgres migrates a PostgreSQL store, or with dryRun prints the SQL it would run. The
// store is opened without migrating, so a dry run changes nothing.
func (a *app) migratePostgres(cmd *cobra.Command, loc storeurl.Location, dryRun bool) error {
	ctx := cmd.Context()
	// Migrating says what it applies; a dry run only prints SQL.
	logger := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if dryRun {
		logger = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	}
	st, err := loc.Open(ctx, storeurl.WithLogger(migrating(logger)))
	if err != nil {
		return err
	}
	defer st.Close()
	pg, ok := st.(*postgres.Store)
	if !ok {
		return fmt.Errorf("migrate %s: unexpected store type %T", loc, st)
	}
	if dryRun {
		return a.printPendingMigrations(cmd, loc, pg)
	}
	if err := pg.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate %s: %w", loc, err)
	}
	version, err := pg.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", loc, err)
	}
	fmt.Fprintf(a.stdout, "PostgreSQL store %s is at schema version %d\n", loc, version)
	return nil
}

func (a *app) printPendingMigrations(cmd *cobra.Command, loc storeurl.Location, pg *postgres.Store) error {
	ctx := cmd.Context()
	version, err := pg.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", loc, err)
	}
	pending, err := pg.PendingMigrations(ctx)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", loc, err)
	}
	if len(pending) == 0 {
		fmt.Fprintf(a.stdout, "-- PostgreSQL store %s is up to date at schema version %d; nothing to run\n", loc, version)
		return nil
	}
	fmt.Fprintf(a.stdout, "-- dry run: `rota migrate` would bring %s from schema version %d to %d\n",
		loc, version, pending[len(pending)-1].Version)
	fmt.Fprintf(a.stdout, "-- in one transaction: create schema %s and its migrations table if missing, then run:\n", pg.Schema())
	for _, m := range pending {
		fmt.Fprintf(a.stdout, "\n-- migration %s\n%s\n", m.Name, strings.TrimSpace(m.SQL))
	}
	return nil
}
