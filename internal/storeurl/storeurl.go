// Package storeurl opens the store a URL names, so every command and service of rota accepts the
// same --store values. Which URLs those are is up to the stores registered (see Register): the
// packages under internal/storeurl register this module's stores, sqlite:PATH (or a bare path)
// and postgres://… URLs, whose ?schema=NAME names the schema rota's tables live in (default
// "rota"), so several environments can share one database. A program gets the stores it imports
// the registering package of; this package imports none, and answers a URL of any other scheme
// with an error wrapping ErrUnknownScheme.
//
// It only chooses and opens a store; it never sets policy. Whether opening migrates is each
// registrant's decision: a SQLite file migrates itself, a shared PostgreSQL schema is left to
// `rota migrate`.
package storeurl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"

	"github.com/rotahq/rota/store"
)

// Default is the store used when none is named: a SQLite file in the working directory.
const Default = "sqlite:rota.db"

// Kinds of store this module's registrants give their locations. A bare path is a SQLite file.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Location is a parsed store URL.
type Location struct {
	// Kind is the scheme the store registered under, canonical: SQLite for sqlite3: URLs too,
	// Postgres for postgresql:// ones. Open opens the store registered under it.
	Kind string
	// Path is the file of a store kept in one file.
	Path string
	// URL is the connection URL of a store on a server, without rota's own parameters.
	URL string
	// Schema is the PostgreSQL schema named by ?schema=, or the namespace named by ?namespace=,
	// or empty for the store's default.
	Schema string
}

// String returns the location as a person should see it: a password in the URL is hidden.
func (l Location) String() string {
	if l.Path != "" {
		return l.Kind + ":" + l.Path
	}
	s := l.Kind + "://…"
	if u, err := url.Parse(l.URL); err == nil {
		// A password may also be a parameter (PostgreSQL's password= and sslpassword=).
		if q := u.Query(); len(q) > 0 {
			hidden := false
			for k := range q {
				if strings.Contains(strings.ToLower(k), "password") {
					q.Set(k, "xxxxx")
					hidden = true
				}
			}
			if hidden {
				u.RawQuery = q.Encode()
			}
		}
		s = u.Redacted()
	}
	if l.Schema != "" && l.Kind == Postgres {
		s += " (schema " + l.Schema + ")"
	} else if l.Schema != "" {
		s += " (namespace " + l.Schema + ")"
	}
	return s
}

var schemePattern = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*):`)

// ErrUnknownScheme is wrapped by the error for a URL whose scheme no store registered: the
// store does not exist yet, or the program does not import the package that registers it.
var ErrUnknownScheme = errors.New("no store registered for scheme")

// Parse reads a store URL: one whose scheme a store registered, parsed by that store's Parse,
// or a bare path, which names a SQLite file, colons and all. A "scheme://…" URL of any other
// scheme is an error wrapping ErrUnknownScheme.
func Parse(raw string) (Location, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return Location{}, fmt.Errorf("store URL is empty; use %s", usage())
	}
	scheme, rest := "", raw
	if m := schemePattern.FindStringSubmatch(raw); m != nil {
		scheme, rest = strings.ToLower(m[1]), raw[len(m[0]):]
	}
	if b, ok := lookup(scheme); ok {
		return b.Parse(raw)
	}
	if scheme != "" && strings.HasPrefix(rest, "//") {
		// Not the URL: it may hold a password.
		return Location{}, fmt.Errorf("store URL %s://…: %w %q; use %s", scheme, ErrUnknownScheme, scheme, usage())
	}
	if _, ok := lookup(SQLite); !ok {
		return Location{}, fmt.Errorf("store %q, a file: %w %q; use %s", raw, ErrUnknownScheme, SQLite, usage())
	}
	return Location{Kind: SQLite, Path: raw}, nil
}

// Option configures Open.
type Option func(*Options)

// Options are what Open passes on to the store's opener.
type Options struct {
	// Logger is where the store logs: slog.Default() unless WithLogger says otherwise.
	Logger *slog.Logger
}

// WithLogger sets where the store logs. Defaults to slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *Options) { o.Logger = l } }

// Open parses raw and opens the store it names.
func Open(ctx context.Context, raw string, opts ...Option) (store.Store, error) {
	loc, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	return loc.Open(ctx, opts...)
}

// Open opens the store at l with the opener registered under l.Kind.
func (l Location) Open(ctx context.Context, opts ...Option) (store.Store, error) {
	o := Options{Logger: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	b, ok := lookup(l.Kind)
	if !ok {
		return nil, fmt.Errorf("cannot open store %s: %w %q", l, ErrUnknownScheme, l.Kind)
	}
	s, err := b.Open(ctx, l, o)
	if err != nil {
		return nil, fmt.Errorf("cannot open store %s: %w", l, err)
	}
	return s, nil
}
