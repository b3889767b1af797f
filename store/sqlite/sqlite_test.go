package sqlite_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
	"github.com/rotahq/rota/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clk clockwork.Clock) store.Store {
		return open(t, filepath.Join(t.TempDir(), "rota.db"), sqlite.WithClock(clk))
	})
}

// With a settle batch of two, a completion whose ends have more dependency edges than that (a
// fan-out's release, a cascade of cancels) parks the rest, and the Store settles it in further
// transactions before Complete returns: the whole contract holds as when one transaction
// resolves everything.
func TestConformanceSettlingInParts(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clk clockwork.Clock) store.Store {
		return open(t, filepath.Join(t.TempDir(), "rota.db"), sqlite.WithClock(clk), sqlite.WithSettleBatch(2))
	})
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// open opens a store that the test closes when it ends.
func open(t testing.TB, path string, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	opts = append([]sqlite.Option{sqlite.WithLogger(quiet)}, opts...)
	s, err := sqlite.Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestIdentityStableAcrossReopen(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "rota.db")
	s, err := sqlite.Open(ctx, path, sqlite.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.Identity(ctx)
	if err != nil || first == "" {
		t.Fatalf("Identity = %q, %v", first, err)
	}
	s.Close()
	again, err := open(t, path).Identity(ctx)
	if err != nil || again != first {
		t.Fatalf("identity after reopen %q (%v), want %q", again, err, first)
	}
	// A new file is a new store.
	if other, _ := open(t, filepath.Join(t.TempDir(), "other.db")).Identity(ctx); other == first {
		t.Fatal("two files share an identity")
	}
}

func TestSchemaTooNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rota.db")
	s := open(t, path)
	_, err := s.DB().ExecContext(t.Context(), `UPDATE rota_meta SET value = '999' WHERE key = 'schema_version'`)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(t.Context()); !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("Migrate = %v, want ErrSchemaTooNew", err)
	}
	if _, err := sqlite.Open(t.Context(), path, sqlite.WithLogger(quiet)); !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("Open = %v, want ErrSchemaTooNew", err)
	}
}

func TestOpenMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "dir", "rota.db")
	_, err := sqlite.Open(t.Context(), path, sqlite.WithLogger(quiet))
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open = %v, want an error naming %s", err, path)
	}
}

// A path is a path, whatever characters a URI would give a meaning.
func TestPathWithQuestionMark(t *testing.T) {
	path := filepath.Join(t.TempDir(), "odd?name#1%20.db")
	s := open(t, path)
	if _, err := s.Identity(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the store is not in the file named: %v", err)
	}
}

func TestClosed(t *testing.T) {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "rota.db"), sqlite.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Insert(t.Context(), []store.InsertParams{job()}); !errors.Is(err, sqlite.ErrClosed) {
		t.Fatalf("Insert after Close = %v, want ErrClosed", err)
	}
}

func job() store.InsertParams {
	return store.InsertParams{Kind: "k", Queue: "default", Args: []byte(`{}`), MaxAttempts: 3}
}

// The file is in WAL mode, and the synchronous setting is the one asked for (NORMAL by default).
func TestPragmas(t *testing.T) {
	for _, tc := range []struct {
		opts []sqlite.Option
		want int
	}{
		{nil, 1},
		{[]sqlite.Option{sqlite.WithSynchronous(sqlite.SynchronousFull)}, 2},
	} {
		s := open(t, filepath.Join(t.TempDir(), "rota.db"), tc.opts...)
		var mode string
		var sync int
		db := s.DB()
		if err := db.QueryRowContext(t.Context(), `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
			t.Errorf("journal_mode = %q (%v), want wal", mode, err)
		}
		if err := db.QueryRowContext(t.Context(), `PRAGMA synchronous`).Scan(&sync); err != nil || sync != tc.want {
			t.Errorf("synchronous = %d (%v), want %d", sync, err, tc.want)
		}
	}
}

// Opening a file that is up to date takes no write lock: a short command opens it while another
// process holds the lock for as long as it likes.
func TestReopenTakesNoWriteLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rota.db")
	a := open(t, path)
	tx, err := a.DB().BeginTx(t.Context(), nil) // BEGIN IMMEDIATE: the file's write lock
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	b, err := sqlite.Open(t.Context(), path, sqlite.WithLogger(quiet), sqlite.WithBusyTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatalf("open while another connection holds the write lock: %v", err)
	}
	b.Close()
}

// A claim whose size changes from one call to the next (as the workers free at each moment do)
// takes exactly what it asks for, whether its limit is written into the statement (up to 256) or bound.
func TestClaimSizesChangingTakeWhatTheyAsk(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "rota.db"))
	ps := make([]store.InsertParams, 600)
	for i := range ps {
		ps[i] = job()
	}
	if _, err := s.Insert(t.Context(), ps); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range []int{3, 87, 3, 300, 1, 87} {
		rows, err := s.Claim(t.Context(), store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: n, Owner: "n", LeaseFor: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != n {
			t.Errorf("claim of %d took %d", n, len(rows))
		}
		total += len(rows)
	}
	if total != 3+87+3+300+1+87 {
		t.Errorf("claimed %d in all", total)
	}
}
