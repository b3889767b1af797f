// Package sqliteurl registers the SQLite store with package storeurl, under the schemes sqlite
// and sqlite3: sqlite:PATH and sqlite://PATH name a file, as a bare path does. Import it for
// its effect. Opening a location creates the file if it does not exist, and migrates it: a
// SQLite file belongs to the processes of one host, and is brought up to date by whichever
// opens it first.
package sqliteurl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rotahq/rota/internal/storeurl"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

func init() {
	b := storeurl.Backend{Kind: storeurl.SQLite, Usage: "sqlite:PATH", Parse: parse, Open: open}
	storeurl.Register("sqlite", b)
	storeurl.Register("sqlite3", b)
}

// parse reads sqlite:PATH or sqlite://PATH (any case of the scheme, sqlite3 too).
func parse(raw string) (storeurl.Location, error) {
	_, rest, _ := strings.Cut(raw, ":")
	path := strings.TrimPrefix(rest, "//")
	if path == "" {
		return storeurl.Location{}, fmt.Errorf("store URL %q names no file; use sqlite:PATH, such as sqlite:rota.db", raw)
	}
	return storeurl.Location{Kind: storeurl.SQLite, Path: path}, nil
}

func open(ctx context.Context, loc storeurl.Location, o storeurl.Options) (store.Store, error) {
	if err := checkPath(loc.Path); err != nil {
		return nil, err
	}
	return sqlite.Open(ctx, loc.Path, sqlite.WithLogger(o.Logger))
}

// checkPath turns the usual reasons a file cannot be opened into plain words before the driver
// reports them as "unable to open database file".
func checkPath(path string) error {
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
