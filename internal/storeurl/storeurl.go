// Package storeurl opens the store a URL names, so every command and service of rota accepts the
// same --store values: sqlite:PATH (or a bare path) and postgres://… URLs. A PostgreSQL URL may
// name the schema rota's tables live in with ?schema=NAME (default "rota"), so several
// environments can share one database.
//
// It only chooses and opens a store; it never migrates a PostgreSQL schema (that is `rota
// migrate`'s decision) and never sets policy.
package storeurl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

// Default is the store used when none is named: a SQLite file in the working directory.
const Default = "sqlite:rota.db"

// Kinds of store a URL can name.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Location is a parsed store URL.
type Location struct {
	// Kind is SQLite or Postgres.
	Kind string
	// Path is the SQLite file.
	Path string
	// URL is the PostgreSQL connection URL, without the schema parameter.
	URL string
	// Schema is the PostgreSQL schema named by ?schema=, or empty for the store's default.
	Schema string
}

// String returns the location as a person should see it: a PostgreSQL password is hidden.
func (l Location) String() string {
	if l.Kind == SQLite {
		return "sqlite:" + l.Path
	}
	s := "postgres://…"
	if u, err := url.Parse(l.URL); err == nil {
		s = u.Redacted()
	}
	if l.Schema != "" {
		s += " (schema " + l.Schema + ")"
	}
	return s
}

var schemePattern = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*):`)

// ErrUnsupported is wrapped by the error for a store that this build cannot open yet.
var ErrUnsupported = errors.New("store not supported yet")

// Parse reads a store URL: "sqlite:PATH", "sqlite://PATH", a bare path, or a "postgres://" or
// "postgresql://" URL.
func Parse(raw string) (Location, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return Location{}, errors.New("store URL is empty; use sqlite:PATH or postgres://…")
	}
	m := schemePattern.FindStringSubmatch(raw)
	scheme := ""
	if m != nil {
		scheme = strings.ToLower(m[1])
	}
	switch scheme {
	case "sqlite", "sqlite3":
		path := strings.TrimPrefix(raw[len(m[0]):], "//")
		if path == "" {
			return Location{}, fmt.Errorf("store URL %q names no file; use sqlite:PATH, such as sqlite:rota.db", raw)
		}
		return Location{Kind: SQLite, Path: path}, nil
	case "postgres", "postgresql":
		return parsePostgres(raw)
	case "redis", "rediss":
		return Location{}, fmt.Errorf("store %s: Redis %w in this build; use sqlite:PATH or postgres://…", scheme+"://…", ErrUnsupported)
	}
	if scheme != "" && strings.HasPrefix(raw[len(m[0]):], "//") {
		return Location{}, fmt.Errorf("store URL %q: unknown scheme %q; use sqlite:PATH or postgres://…", raw, scheme)
	}
	// Anything else is a file name, colons and all.
	return Location{Kind: SQLite, Path: raw}, nil
}

// Option configures Open.
type Option func(*options)

type options struct{ logger *slog.Logger }

// WithLogger sets where the store logs. Defaults to slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// parsePostgres takes rota's own schema parameter out of a PostgreSQL URL: the server would
// refuse it as an unknown setting.
func parsePostgres(raw string) (Location, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// The error would repeat the URL, password and all.
		return Location{}, errors.New("store URL: not a valid postgres:// URL")
	}
	q := u.Query()
	schema := q.Get("schema")
	if q.Has("schema") {
		if schema == "" {
			return Location{}, errors.New("store URL: ?schema= names no schema")
		}
		q.Del("schema")
		u.RawQuery = q.Encode()
	}
	return Location{Kind: Postgres, URL: u.String(), Schema: schema}, nil
}

// Open parses raw and opens the store it names. A SQLite file is created if it does not exist,
// and migrated; a PostgreSQL schema is only checked, not migrated (run `rota migrate`).
func Open(ctx context.Context, raw string, opts ...Option) (store.Store, error) {
	loc, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	return loc.Open(ctx, opts...)
}

// Open opens the store at l.
func (l Location) Open(ctx context.Context, opts ...Option) (store.Store, error) {
	o := options{logger: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	switch l.Kind {
	case SQLite:
		if err := checkSQLitePath(l.Path); err != nil {
			return nil, fmt.Errorf("cannot open store %s: %w", l, err)
		}
		s, err := sqlite.Open(ctx, l.Path, sqlite.WithLogger(o.logger))
		if err != nil {
			return nil, fmt.Errorf("cannot open store %s: %w", l, err)
		}
		return s, nil
	case Postgres:
		s, err := openPostgres(ctx, l.URL, l.Schema, o.logger)
		if err != nil {
			return nil, fmt.Errorf("cannot open store %s: %w", l, err)
		}
		return s, nil
	}
	return nil, fmt.Errorf("cannot open store: unknown kind %q", l.Kind)
}

// checkSQLitePath turns the usual reasons a file cannot be opened into plain words before the
// driver reports them as "unable to open database file".
func checkSQLitePath(path string) error {
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("directory %s does not exist", dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	fi, err = os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory, not a SQLite file", path)
	}
	return nil
}
