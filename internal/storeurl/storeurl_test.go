package storeurl_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rotahq/rota/internal/pgtest"
	"github.com/rotahq/rota/internal/storeurl"
	_ "github.com/rotahq/rota/internal/storeurl/postgresurl"
	_ "github.com/rotahq/rota/internal/storeurl/sqliteurl"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/postgres"
)

// Every URL form rota has accepted parses as it did, through the stores' registrations.
func TestParse(t *testing.T) {
	for raw, want := range map[string]storeurl.Location{
		"sqlite:rota.db":          {Kind: storeurl.SQLite, Path: "rota.db"},
		"sqlite:/var/lib/rota.db": {Kind: storeurl.SQLite, Path: "/var/lib/rota.db"},
		"sqlite:///var/rota.db":   {Kind: storeurl.SQLite, Path: "/var/rota.db"},
		"SQLITE:x.db":             {Kind: storeurl.SQLite, Path: "x.db"},
		"sqlite3:x.db":            {Kind: storeurl.SQLite, Path: "x.db"},
		"rota.db":                 {Kind: storeurl.SQLite, Path: "rota.db"},
		"/tmp/a:b.db":             {Kind: storeurl.SQLite, Path: "/tmp/a:b.db"},
		"./data/rota.db":          {Kind: storeurl.SQLite, Path: "./data/rota.db"},
		"redis:x.db":              {Kind: storeurl.SQLite, Path: "redis:x.db"}, // a file, colon and all
		"postgres://u:p@db/rota":  {Kind: storeurl.Postgres, URL: "postgres://u:p@db/rota"},
		"postgresql://db/rota":    {Kind: storeurl.Postgres, URL: "postgresql://db/rota"},
		"postgres://db/app?schema=jobs&sslmode=disable": {Kind: storeurl.Postgres, URL: "postgres://db/app?sslmode=disable", Schema: "jobs"},
	} {
		got, err := storeurl.Parse(raw)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", raw, got, err, want)
		}
	}
	for raw, wantErr := range map[string]string{
		"":                        "empty",
		"sqlite:":                 "names no file",
		"redis://localhost":       `no store registered for scheme "redis"`,
		"rediss://u:pw@localhost": `no store registered for scheme "rediss"`,
		"mysql://db/x":            `no store registered for scheme "mysql"`,
		"postgres://db/x?schema=": "names no schema",
		"postgres://u:p@[::1":     "not a valid postgres:// URL",
	} {
		_, err := storeurl.Parse(raw)
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Parse(%q) error = %v, want %q", raw, err, wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "pw@") {
			t.Errorf("Parse(%q) error repeats the password: %v", raw, err)
		}
	}
	_, err := storeurl.Parse("redis://x")
	if !errors.Is(err, storeurl.ErrUnknownScheme) {
		t.Errorf("redis error does not wrap ErrUnknownScheme: %v", err)
	}
	if !strings.Contains(err.Error(), "sqlite:PATH") || !strings.Contains(err.Error(), "postgres://…") {
		t.Errorf("redis error does not say which stores there are: %v", err)
	}
}

func TestLocationStringHidesPassword(t *testing.T) {
	loc, err := storeurl.Parse("postgres://rota:s3cret@db:5432/rota?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	if s := loc.String(); strings.Contains(s, "s3cret") || !strings.Contains(s, "db:5432") || !strings.Contains(s, "sslmode=disable") {
		t.Fatalf("String() = %q", s)
	}
	if s := (storeurl.Location{Kind: storeurl.SQLite, Path: "x.db"}).String(); s != "sqlite:x.db" {
		t.Fatalf("String() = %q, want sqlite:x.db", s)
	}
}

// memStore is what the fake backend opens: a store of no use but its identity.
type memStore struct{ store.Store }

// fakeOpened is the location the fake backend last opened.
var fakeOpened storeurl.Location

// The fake backend registers once per test binary, as a store's package does, so that the test
// may run more than once (-count).
func init() {
	storeurl.Register("fake", storeurl.Backend{
		Kind: "fake", Usage: "fake://NAME",
		Parse: func(raw string) (storeurl.Location, error) {
			return storeurl.Location{Kind: "fake", URL: raw}, nil
		},
		Open: func(_ context.Context, loc storeurl.Location, o storeurl.Options) (store.Store, error) {
			if o.Logger == nil {
				return nil, errors.New("no logger")
			}
			fakeOpened = loc
			return memStore{}, nil
		},
	})
}

// A registered scheme parses and opens through its backend, whatever its case; a scheme
// registers once.
func TestRegister(t *testing.T) {
	st, err := storeurl.Open(t.Context(), "FAKE://x")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.(memStore); !ok || fakeOpened.URL != "FAKE://x" {
		t.Fatalf("Open = %T, opened %+v", st, fakeOpened)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("registering fake twice did not panic")
		}
	}()
	storeurl.Register("Fake", storeurl.Backend{Kind: "fake", Parse: func(string) (storeurl.Location, error) { return storeurl.Location{}, nil },
		Open: func(context.Context, storeurl.Location, storeurl.Options) (store.Store, error) { return nil, nil }})
}

func TestOpenUnregisteredKind(t *testing.T) {
	_, err := (storeurl.Location{Kind: "redis", URL: "redis://x"}).Open(t.Context())
	if !errors.Is(err, storeurl.ErrUnknownScheme) {
		t.Fatalf("Open of an unregistered kind = %v, want ErrUnknownScheme", err)
	}
}

func TestOpenSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rota.db")
	st, err := storeurl.Open(t.Context(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Identity(t.Context()); err != nil {
		t.Fatalf("store not migrated on open: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

// A postgres:// or postgresql:// URL opens the schema its ?schema= names, without migrating it.
func TestOpenPostgres(t *testing.T) {
	url := pgtest.URL(t)
	for _, scheme := range []string{"postgres", "postgresql"} {
		schema := pgtest.Schema(t, url)
		raw := pgtest.StoreURL(t, url, schema)
		raw = scheme + raw[strings.Index(raw, ":"):]
		st, err := storeurl.Open(t.Context(), raw)
		if err != nil {
			t.Fatalf("Open(%s): %v", scheme, err)
		}
		pg, ok := st.(*postgres.Store)
		if !ok || pg.Schema() != schema {
			t.Fatalf("Open(%s) = %T on schema %q, want %q", scheme, st, pg.Schema(), schema)
		}
		if v, err := pg.SchemaVersion(t.Context()); err != nil || v != 0 {
			t.Fatalf("schema version after Open = %d, %v; want 0: opening migrated", v, err)
		}
		st.Close()
	}
}

func TestOpenUnopenableSQLite(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plain")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	notDB := filepath.Join(dir, "not.db")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	for raw, want := range map[string]string{
		filepath.Join(dir, "no", "rota.db"): "does not exist",
		filepath.Join(file, "rota.db"):      "is not a directory",
		dir:                                 "is a directory, not a SQLite file",
		notDB:                               "cannot open store sqlite:" + notDB,
	} {
		st, err := storeurl.Open(t.Context(), raw)
		if err == nil {
			st.Close()
			t.Errorf("Open(%q) succeeded", raw)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q) = %v, want %q", raw, err, want)
		}
	}
}
