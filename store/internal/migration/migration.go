// Package migration reads a SQL store's schema migrations: numbered files embedded in the
// store's package, one per version, never edited once released (a change is a new file). Both
// SQL stores version their schema this way; what is theirs is where they record the version,
// how they lock while migrating, and how they fill in a file's placeholders.
package migration

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/rotahq/rota/store"
)

// Migration is one versioned step of a schema.
type Migration struct {
	Version int
	// Name is the file's name without its extension, e.g. "001_jobs".
	Name string
	// SQL is the file's text.
	SQL string
}

// Set is a schema's migrations, by version from 1 on, without gaps.
type Set []Migration

// Load reads the files dir/N_name.sql of fsys: N is the version (leading zeros allowed), and the
// versions must run 1, 2, 3… without gaps or repeats, so that a version number names one
// schema in every build.
func Load(fsys fs.FS, dir string) (Set, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	var set Set
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		name := strings.TrimSuffix(e.Name(), ".sql")
		num, _, _ := strings.Cut(name, "_")
		version, err := strconv.Atoi(num)
		if err != nil || version < 1 {
			return nil, fmt.Errorf("migration %s: no version number before its name", e.Name())
		}
		text, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		set = append(set, Migration{Version: version, Name: name, SQL: string(text)})
	}
	slices.SortFunc(set, func(a, b Migration) int { return a.Version - b.Version })
	for i, m := range set {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d", m.Name, i+1)
		}
	}
	if len(set) == 0 {
		return nil, fmt.Errorf("migrations: no %s/*.sql files", dir)
	}
	return set, nil
}

// MustLoad is Load for files embedded in the build, which a test of the store reads on every
// run: a mistake in them is the build's, so it panics.
func MustLoad(fsys fs.FS, dir string) Set {
	set, err := Load(fsys, dir)
	if err != nil {
		panic(err)
	}
	return set
}

// Latest is the version the set migrates to.
func (s Set) Latest() int { return len(s) }

// After returns the migrations that bring a schema at version to Latest, in order: none when it
// is there. A schema newer than the set, migrated by a newer build, is an error wrapping
// store.ErrSchemaTooNew: this build would misread it.
func (s Set) After(version int) (Set, error) {
	if version > s.Latest() {
		return nil, fmt.Errorf("%w: at version %d, this build knows %d", store.ErrSchemaTooNew, version, s.Latest())
	}
	return s[max(version, 0):], nil
}
