package postgres

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/rotahq/rota/store"
)

func TestOpenDoesNotMigrate(t *testing.T) {
	s := openSchema(t, newSchema(t))
	if v, err := s.SchemaVersion(t.Context()); err != nil || v != 0 {
		t.Fatalf("SchemaVersion = %d, %v; want 0 before Migrate", v, err)
	}
	if _, err := s.Identity(t.Context()); err == nil {
		t.Fatal("Identity of an unmigrated store succeeded")
	}
	pending, err := s.PendingMigrations(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != len(migrations) || pending[0].Version != 1 {
		t.Fatalf("pending %+v, want all %d migrations", pending, len(migrations))
	}
	// The dry run shows the SQL that will run, for this schema.
	if !strings.Contains(pending[0].SQL, `"`+s.Schema()+`".jobs`) || strings.Contains(pending[0].SQL, "{schema}") {
		t.Fatalf("migration SQL not rendered for schema %s:\n%s", s.Schema(), pending[0].SQL)
	}
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if pending, err := s.PendingMigrations(t.Context()); err != nil || len(pending) != 0 {
		t.Fatalf("after Migrate: pending %d, %v", len(pending), err)
	}
	if v, _ := s.SchemaVersion(t.Context()); v != latestVersion() {
		t.Fatalf("SchemaVersion = %d, want %d", v, latestVersion())
	}
}

// Nodes started together all migrate at once: one does the work, the others wait on the
// advisory lock and find nothing left to do.
func TestMigrateConcurrent(t *testing.T) {
	schema := newSchema(t)
	const nodes = 8
	stores := make([]*Store, nodes)
	for i := range stores {
		stores[i] = openSchema(t, schema)
	}
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() { errs[i] = s.Migrate(t.Context()) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: Migrate: %v", i, err)
		}
	}
	var rows int
	err := stores[0].pool.QueryRow(t.Context(), stores[0].sql(`SELECT count(*) FROM {schema}.migrations`)).Scan(&rows)
	if err != nil || rows != len(migrations) {
		t.Fatalf("%d version rows (%v), want %d", rows, err, len(migrations))
	}
	first, err := stores[0].Identity(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stores[1:] {
		if id, _ := s.Identity(t.Context()); id != first {
			t.Fatalf("identities differ: %q and %q", first, id)
		}
	}
}

func TestSchemaTooNew(t *testing.T) {
	s := open(t)
	_, err := s.pool.Exec(t.Context(), s.sql(`INSERT INTO {schema}.migrations (version, name) VALUES ($1, 'from the future')`),
		latestVersion()+1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(t.Context()); !errors.Is(err, store.ErrSchemaTooNew) {
		t.Errorf("Migrate = %v, want ErrSchemaTooNew", err)
	}
	if _, err := s.PendingMigrations(t.Context()); !errors.Is(err, store.ErrSchemaTooNew) {
		t.Errorf("PendingMigrations = %v, want ErrSchemaTooNew", err)
	}
	for _, opts := range [][]Option{nil, {WithAutoMigrate()}} {
		_, err := Open(t.Context(), testURL(), append(opts, WithSchema(s.Schema()), WithLogger(quiet))...)
		if !errors.Is(err, store.ErrSchemaTooNew) {
			t.Errorf("Open = %v, want ErrSchemaTooNew", err)
		}
	}
}

// The identity is written once, by the first migration: reopening the store keeps it, and a
// recreated store has a new one.
func TestIdentity(t *testing.T) {
	schema := newSchema(t)
	a := openSchema(t, schema, WithAutoMigrate())
	first, err := a.Identity(t.Context())
	if err != nil || len(first) < 16 {
		t.Fatalf("Identity = %q, %v", first, err)
	}
	b := openSchema(t, schema, WithAutoMigrate())
	if id, _ := b.Identity(t.Context()); id != first {
		t.Fatalf("reopened store has identity %q, want %q", id, first)
	}
	if _, err := a.pool.Exec(t.Context(), a.sql(`DROP SCHEMA {schema} CASCADE`)); err != nil {
		t.Fatal(err)
	}
	if err := a.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if id, _ := a.Identity(t.Context()); id == first || id == "" {
		t.Fatalf("recreated store kept identity %q", id)
	}
}

// Two schemas in one database are two stores.
func TestSchemaOption(t *testing.T) {
	a, b := open(t), open(t)
	j := mustInsert(t, a, job("k"))[0].Job
	if _, err := b.Get(t.Context(), j.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("store b sees store a's job: %v", err)
	}
	if n := countJobs(t, b); n != 0 {
		t.Fatalf("store b has %d jobs", n)
	}
	var tables int
	err := a.pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_tables WHERE schemaname = $1`, a.Schema()).Scan(&tables)
	if err != nil || tables == 0 {
		t.Fatalf("no tables in schema %s (%v)", a.Schema(), err)
	}
	if _, err := New(a.pool, WithSchema("")); err == nil {
		t.Error("New accepted an empty schema name")
	}
}
