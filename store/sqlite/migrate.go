package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strconv"

	"github.com/rotahq/rota/store/internal/migration"
)

// schema holds the migrations, schema/NNNN_name.sql, applied in version order (see package
// migration). The schema version is the number of the last one applied.
//
//go:embed schema/*.sql
var schema embed.FS

var migrations = migration.MustLoad(schema, "schema")

// SchemaVersion is the schema version this build migrates to.
var SchemaVersion = migrations.Latest()

// Migrate brings the schema to SchemaVersion in one transaction, and writes the store's identity
// the first time. Other processes wait on the write lock meanwhile, so concurrent Migrates apply
// each step once.
func (s *Store) Migrate(ctx context.Context) error {
	if err := s.migrate(ctx); err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	return nil
}

func (s *Store) migrate(ctx context.Context) error {
	if s.current(ctx) {
		return nil
	}
	return s.write(ctx, func(t *wtx) error { return migrate(t, s.w.conn) })
}

// current reports, from a read, whether the file is at this build's version and has its
// identity: then opening it takes no write lock, which a busy process on the same file would
// make every short command (rota enqueue, rota jobs list) wait for. Any doubt (a new file, an
// old schema, an error) leaves the decision to migrate, under the lock.
func (s *Store) current(ctx context.Context) bool {
	var version, identities int
	err := s.db.QueryRowContext(ctx, `SELECT
		coalesce((SELECT CAST(value AS INTEGER) FROM rota_meta WHERE key = 'schema_version'), 0),
		(SELECT count(*) FROM rota_meta WHERE key = 'identity')`).Scan(&version, &identities)
	return err == nil && version == SchemaVersion && identities == 1
}

func migrate(t *wtx, conn *sql.Conn) error {
	if _, err := t.exec(`CREATE TABLE IF NOT EXISTS rota_meta (
		key   TEXT PRIMARY KEY,
		value TEXT NOT NULL
	) STRICT, WITHOUT ROWID`); err != nil {
		return err
	}
	version, err := metaInt(t, "schema_version")
	if err != nil {
		return err
	}
	pending, err := migrations.After(version)
	if err != nil {
		return fmt.Errorf("file: %w", err)
	}
	for _, m := range pending {
		// A migration file holds several statements, which only an unprepared Exec runs.
		if _, err := conn.ExecContext(stmtCtx, m.SQL); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
		t.w.log.Info("sqlite: migrated", "version", m.Version, "migration", m.Name)
	}
	if version != SchemaVersion {
		if err := setMeta(t, "schema_version", strconv.Itoa(SchemaVersion)); err != nil {
			return err
		}
	}
	_, err = t.exec(`INSERT INTO rota_meta (key, value) VALUES ('identity', ?) ON CONFLICT DO NOTHING`, rand.Text())
	return err
}

func metaInt(t *wtx, key string) (int, error) {
	rows, err := t.query(`SELECT value FROM rota_meta WHERE key = ?`, key)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	if !rows.Next() {
		return 0, rows.Err()
	}
	var v string
	if err := rows.Scan(&v); err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("meta %s = %q: %w", key, v, err)
	}
	return n, errors.Join(rows.Close(), rows.Err())
}

func setMeta(t *wtx, key, value string) error {
	_, err := t.exec(`INSERT INTO rota_meta (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
	return err
}

// Identity returns the random id written when the file was first migrated.
func (s *Store) Identity(ctx context.Context) (string, error) {
	var id string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM rota_meta WHERE key = 'identity'`).Scan(&id)
	if err != nil {
		return "", fmt.Errorf("sqlite: identity: %w", err)
	}
	return id, nil
}
