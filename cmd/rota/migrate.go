package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rotahq/rota/internal/storeurl"
	"github.com/rotahq/rota/store/sqlite"
)

func (a *app) migrateCmd() *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Bring the store's schema up to this version of rota",
		Long: `Bring the store's schema up to the version this build of rota understands. It is safe to
run from several places at once and to run again.

A SQLite store migrates itself whenever rota opens it; a PostgreSQL or Redis store must be
migrated with this command before nodes use it. --dry-run shows what would be done (for
PostgreSQL, the SQL).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			loc, err := storeurl.Parse(a.storeURL)
			if err != nil {
				return err
			}
			switch loc.Kind {
			case storeurl.Postgres:
				return a.migratePostgres(cmd, loc, dryRun)
			case storeurl.SQLite:
				return a.migrateSQLite(cmd, loc, dryRun)
			}
			return a.migrateOther(cmd, loc, dryRun)
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what would be done, change nothing")
	return cmd
}

func (a *app) migrateSQLite(cmd *cobra.Command, loc storeurl.Location, dryRun bool) error {
	if dryRun {
		_, err := os.Stat(loc.Path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			fmt.Fprintf(a.stdout, "would create the SQLite store %s at schema version %d\n", loc.Path, sqlite.SchemaVersion)
		case err != nil:
			return fmt.Errorf("cannot read store %s: %w", loc, err)
		default:
			fmt.Fprintf(a.stdout, "would bring the SQLite store %s to schema version %d, if it is older\n", loc.Path, sqlite.SchemaVersion)
		}
		fmt.Fprintln(a.stdout, "(a SQLite store also migrates itself whenever rota opens it)")
		return nil
	}
	// Opening a SQLite store migrates it.
	st, err := loc.Open(cmd.Context(), storeurl.WithLogger(a.quietLogger()))
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Fprintf(a.stdout, "SQLite store %s is at schema version %d\n", loc.Path, sqlite.SchemaVersion)
	return nil
}

// migrateOther migrates a store that has no schema to show (Redis): it writes the store's
// version and identity, once, and says so.
func (a *app) migrateOther(cmd *cobra.Command, loc storeurl.Location, dryRun bool) error {
	if dryRun {
		fmt.Fprintf(a.stdout, "would bring the %s store %s to this build's version, if it is older\n", loc.Kind, loc)
		return nil
	}
	st, err := loc.Open(cmd.Context(), storeurl.WithLogger(migrating(a.quietLogger())))
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(cmd.Context()); err != nil {
		return fmt.Errorf("migrate %s: %w", loc, err)
	}
	id, err := st.Identity(cmd.Context())
	if err != nil {
		return fmt.Errorf("migrate %s: %w", loc, err)
	}
	fmt.Fprintf(a.stdout, "%s store %s is up to date (identity %s)\n", loc.Kind, loc, id)
	return nil
}

// migrating is logger without the warning a store gives on open when it needs migrating: the
// command opening it is doing just that, and would otherwise start by warning about itself.
func migrating(logger *slog.Logger) *slog.Logger {
	return slog.New(dropNeedsMigrating{logger.Handler()})
}

type dropNeedsMigrating struct{ slog.Handler }

func (h dropNeedsMigrating) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasSuffix(r.Message, "needs migrating") {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h dropNeedsMigrating) WithAttrs(attrs []slog.Attr) slog.Handler {
	return dropNeedsMigrating{h.Handler.WithAttrs(attrs)}
}

func (h dropNeedsMigrating) WithGroup(name string) slog.Handler {
	return dropNeedsMigrating{h.Handler.WithGroup(name)}
}
