package postgres

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/pgtest"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clk clockwork.Clock) store.Store {
		return open(t, WithClock(clk))
	})
}

// With a settle batch of two, a completion whose ends have more dependency edges than that (a
// fan-out's release, a cascade of cancels) parks the rest, and the Store settles it in further
// transactions before Complete returns: the whole contract holds as when one transaction
// resolves everything.
func TestConformanceSettlingInParts(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clk clockwork.Clock) store.Store {
		return open(t, WithClock(clk), WithSettleBatch(2))
	})
}

// testURL is the database the tests use: ROTA_TEST_POSTGRES_URL, or the local server that
// scripts/postgres.sh makes sure of.
func testURL() string {
	if u := os.Getenv("ROTA_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return pgtest.URLDefault
}

// quiet is the tests' logger: the tests check outcomes, not log lines.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newSchema returns a fresh schema name, dropped with everything in it when the test ends, so
// tests can run in parallel with each other and with other packages on one database.
func newSchema(t testing.TB) string {
	t.Helper()
	return pgtest.Schema(t, testURL())
}

// open returns a migrated store on a fresh schema, closed when the test ends.
func open(t testing.TB, opts ...Option) *Store {
	t.Helper()
	return openSchema(t, newSchema(t), append([]Option{WithAutoMigrate()}, opts...)...)
}

// openSchema opens a store on schema, closed when the test ends (before the schema is dropped).
func openSchema(t testing.TB, schema string, opts ...Option) *Store {
	t.Helper()
	return openURL(t, testURL(), schema, opts...)
}

func openURL(t testing.TB, url, schema string, opts ...Option) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, url, append([]Option{WithSchema(schema), WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatalf("Open: %v (is PostgreSQL up? scripts/postgres.sh starts one)", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func job(kind string) store.InsertParams {
	return store.InsertParams{Kind: kind, Queue: "default", Args: []byte(`{"n":1}`), MaxAttempts: 3}
}

func mustInsert(t testing.TB, s *Store, ps ...store.InsertParams) []store.InsertResult {
	t.Helper()
	res, err := s.Insert(t.Context(), ps)
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	return res
}

func mustGet(t testing.TB, s *Store, id int64) *store.JobRow {
	t.Helper()
	j, err := s.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return j
}

func countJobs(t testing.TB, s *Store) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(t.Context(), s.sql(`SELECT count(*) FROM {schema}.jobs`)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
