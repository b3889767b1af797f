package storeurl

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for raw, want := range map[string]Location{
		"sqlite:rota.db":          {Kind: SQLite, Path: "rota.db"},
		"sqlite:/var/lib/rota.db": {Kind: SQLite, Path: "/var/lib/rota.db"},
		"sqlite:///var/rota.db":   {Kind: SQLite, Path: "/var/rota.db"},
		"SQLITE:x.db":             {Kind: SQLite, Path: "x.db"},
		"rota.db":                 {Kind: SQLite, Path: "rota.db"},
		"/tmp/a:b.db":             {Kind: SQLite, Path: "/tmp/a:b.db"},
		"./data/rota.db":          {Kind: SQLite, Path: "./data/rota.db"},
		"postgres://u:p@db/rota":  {Kind: Postgres, URL: "postgres://u:p@db/rota"},
		"postgresql://db/rota":    {Kind: Postgres, URL: "postgresql://db/rota"},
		"postgres://db/app?schema=jobs&sslmode=disable": {Kind: Postgres, URL: "postgres://db/app?sslmode=disable", Schema: "jobs"},
	} {
		got, err := Parse(raw)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", raw, got, err, want)
		}
	}
	for raw, wantErr := range map[string]string{
		"":                        "empty",
		"sqlite:":                 "names no file",
		"redis://localhost":       "Redis store not supported yet",
		"rediss://localhost":      "Redis store not supported yet",
		"mysql://db/x":            `unknown scheme "mysql"`,
		"postgres://db/x?schema=": "names no schema",
		"postgres://u:p@[::1":     "not a valid postgres:// URL",
	} {
		_, err := Parse(raw)
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Parse(%q) error = %v, want %q", raw, err, wantErr)
		}
	}
	if _, err := Parse("redis://x"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("redis error does not wrap ErrUnsupported: %v", err)
	}
}

func TestLocationStringHidesPassword(t *testing.T) {
	loc, err := Parse("postgres://rota:s3cret@db:5432/rota?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	if s := loc.String(); strings.Contains(s, "s3cret") || !strings.Contains(s, "db:5432") || !strings.Contains(s, "sslmode=disable") {
		t.Fatalf("String() = %q", s)
	}
}

func TestOpenSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rota.db")
	st, err := Open(t.Context(), "sqlite:"+path)
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
		st, err := Open(t.Context(), raw)
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
