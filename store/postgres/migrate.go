package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/rotahq/rota/store"
)

// Migration is one versioned step of the schema.
type Migration struct {
	Version int
	// Name is the file's name without its extension, e.g. "001_jobs".
	Name string
	// SQL is the text Migrate runs, with the store's schema filled in.
	SQL string
}

// migrationFS holds migrations/NNN_name.sql. A migration runs in one transaction with the others
// pending: it must not hold statements that refuse a transaction (CREATE INDEX CONCURRENTLY).
//
//go:embed migrations/*.sql
var migrationFS embed.FS

var migrations = mustLoadMigrations()

// mustLoadMigrations reads the embedded migrations, which must be numbered 1, 2, 3… without gaps.
func mustLoadMigrations() []Migration {
	entries, err := migrationFS.ReadDir("migrations")
	if err != nil {
		panic(err)
	}
	var ms []Migration
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".sql")
		num, _, _ := strings.Cut(name, "_")
		version, err := strconv.Atoi(num)
		if err != nil {
			panic(fmt.Sprintf("postgres: migration %s: no version number", e.Name()))
		}
		text, err := migrationFS.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			panic(err)
		}
		ms = append(ms, Migration{Version: version, Name: name, SQL: string(text)})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	for i, m := range ms {
		if m.Version != i+1 {
			panic(fmt.Sprintf("postgres: migration %s: want version %d", m.Name, i+1))
		}
	}
	return ms
}

// latestVersion is the schema version this build knows.
func latestVersion() int { return migrations[len(migrations)-1].Version }

// migrationsAfter returns the migrations newer than version, for this store's schema.
func (s *Store) migrationsAfter(version int) []Migration {
	var out []Migration
	for _, m := range migrations {
		if m.Version > version {
			m.SQL = s.sql(m.SQL)
			out = append(out, m)
		}
	}
	return out
}

// queryRower is what a pool and a transaction have in common for the version check.
type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// SchemaVersion returns the version of the store's schema: 0 when it was never migrated.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	v, err := s.schemaVersion(ctx, s.pool)
	if err != nil {
		return 0, fmt.Errorf("postgres: schema version: %w", err)
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
	if version > latestVersion() {
		return nil, s.tooNew(version)
	}
	return s.migrationsAfter(version), nil
}

func (s *Store) tooNew(version int) error {
	return fmt.Errorf("postgres: schema %s at version %d, this build knows %d: %w",
		s.cfg.schema, version, latestVersion(), store.ErrSchemaTooNew)
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
		if version > latestVersion() {
			return s.tooNew(version)
		}
		for _, m := range s.migrationsAfter(version) {
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
		return fmt.Errorf("postgres: migrate: %w", err)
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
		return "", fmt.Errorf("postgres: identity: %w", err)
	}
	return id, nil
}
