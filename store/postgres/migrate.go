package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/migration"
)

// Migration is one versioned step of the schema. Its Name is the file's name without its
// extension, e.g. "001_jobs"; PendingMigrations gives its SQL with the store's schema filled in.
type Migration = migration.Migration

// migrationFS holds migrations/NNN_name.sql, numbered 1, 2, 3… without gaps (see package
// migration). A migration runs in one transaction with the others pending: it must not hold
// statements that refuse a transaction (CREATE INDEX CONCURRENTLY).
//
//go:embed migrations/*.sql
var migrationFS embed.FS

var migrations = migration.MustLoad(migrationFS, "migrations")

// latestVersion is the schema version this build knows.
func latestVersion() int { return migrations.Latest() }

// migrationsAfter returns the migrations that bring a schema at version to latestVersion, for
// this store's schema, or an error wrapping store.ErrSchemaTooNew.
func (s *Store) migrationsAfter(version int) ([]Migration, error) {
	pending, err := migrations.After(version)
	if err != nil {
		return nil, fmt.Errorf("postgres: schema %s: %w", s.cfg.schema, unavailable(err))
	}
	out := make([]Migration, len(pending))
	for i, m := range pending {
		m.SQL = s.sql(m.SQL)
		out[i] = m
	}
	return out, nil
}

// queryRower is what a pool and a transaction have in common for the version check.
type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// SchemaVersion returns the version of the store's schema: 0 when it was never migrated.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	v, err := s.schemaVersion(ctx, s.pool)
	if err != nil {
		return 0, fmt.Errorf("postgres: schema version: %w", unavailable(err))
	}
	return v, nil
}

func (s *Store) schemaVersion(ctx context.Context, q queryRower) (int, error) {
	var exists bool
	table := pgx.Identifier{s.cfg.schema, "migrations"}.Sanitize()
	if err := q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		return 0, nil
	}
	var version int
	err := q.QueryRow(ctx, s.sql(`SELECT coalesce(max(version), 0) FROM {schema}.migrations`)).Scan(&version)
	return version, err
}

// PendingMigrations returns the migrations Migrate would run, for a dry run. It fails with
// store.ErrSchemaTooNew when the schema is newer than this build.
func (s *Store) PendingMigrations(ctx context.Context) ([]Migration, error) {
	version, err := s.SchemaVersion(ctx)
	if err != nil {
		return nil, err
	}
	return s.migrationsAfter(version)
}

// Migrate brings the schema to this build's version in one transaction. A transaction-scoped
// advisory lock, keyed by the schema name, lets one node migrate while the others wait and then
// find nothing to do.
func (s *Store) Migrate(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLockKey(s.cfg.schema)); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		// CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege on the database even when the
		// schema exists; a schema made by an administrator needs no such privilege.
		var exists bool
		err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, s.cfg.schema).Scan(&exists)
		if err != nil {
			return err
		}
		if !exists {
			if _, err := tx.Exec(ctx, s.sql(`CREATE SCHEMA {schema}`)); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, s.sql(`CREATE TABLE IF NOT EXISTS {schema}.migrations (
			version    integer PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`))
		if err != nil {
			return err
		}
		version, err := s.schemaVersion(ctx, tx)
		if err != nil {
			return err
		}
		pending, err := s.migrationsAfter(version)
		if err != nil {
			return err
		}
		for _, m := range pending {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("%s: %w", m.Name, err)
			}
			_, err := tx.Exec(ctx, s.sql(`INSERT INTO {schema}.migrations (version, name) VALUES ($1, $2)`), m.Version, m.Name)
			if err != nil {
				return err
			}
			s.cfg.logger.Info("rota: migrated", "schema", s.cfg.schema, "migration", m.Name)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, store.ErrSchemaTooNew) {
			return err
		}
		return fmt.Errorf("postgres: migrate: %w", unavailable(err))
	}
	return nil
}

// migrateLockKey is the advisory lock Migrate takes: one per schema, so stores on different
// schemas migrate independently.
func migrateLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("rota.migrate:" + schema))
	return int64(h.Sum64())
}

// Identity returns the random id written by the first migration.
func (s *Store) Identity(ctx context.Context) (string, error) {
	var id string
	if err := s.pool.QueryRow(ctx, s.sql(`SELECT identity FROM {schema}.meta`)).Scan(&id); err != nil {
		return "", fmt.Errorf("postgres: identity: %w", unavailable(err))
	}
	return id, nil
}
