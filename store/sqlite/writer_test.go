package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// openTemp opens a store on a fresh file of the test's temporary directory, closed when the
// test ends.
func openTemp(t testing.TB, opts ...Option) *Store {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "rota.db"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// groupWriter returns a writer on a migrated file with its run loop not started, so that a test
// can hand it a group of its choosing, and what it published.
func groupWriter(t *testing.T) (*writer, *sql.DB, *[]store.Notification) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rota.db")
	s, err := Open(t.Context(), path, WithLogger(discard))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", dataSource(path, defaults()))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var published []store.Notification
	w := newWriter(conn, clockwork.NewRealClock(), discard, func(n []store.Notification) {
		published = append(published, n...)
	})
	t.Cleanup(func() {
		w.cache.close()
		conn.Close()
		db.Close()
	})
	return w, db, &published
}

func insertRequest(ctx context.Context, queue string, fail error) *request {
	return &request{ctx: ctx, done: make(chan error, 1), fn: func(t *wtx) error {
		p := store.InsertParams{Kind: "k", Queue: queue, Args: []byte(`{}`), MaxAttempts: 1}
		_, notes, err := insertJobs(t, t.now, []store.InsertParams{p})
		t.notify(notes...)
		if err != nil {
			return err
		}
		return fail
	}}
}

func queues(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT queue FROM jobs ORDER BY queue`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var q string
		if err := rows.Scan(&q); err != nil {
			t.Fatal(err)
		}
		out = append(out, q)
	}
	return out
}

// A request that fails in a group is undone alone; a request whose context ended is skipped; the
// rest commit, and only their notifications are published.
func TestGroupIsolatesFailure(t *testing.T) {
	w, db, published := groupWriter(t)
	boom := errors.New("boom")
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	group := []*request{
		insertRequest(t.Context(), "a", nil),
		insertRequest(t.Context(), "b", boom),
		insertRequest(t.Context(), "c", nil),
		insertRequest(gone, "d", nil),
	}
	w.runGroup(group)
	want := []error{nil, boom, nil, context.Canceled}
	for i, r := range group {
		if !errors.Is(r.err, want[i]) || (want[i] == nil && r.err != nil) {
			t.Errorf("request %d: err %v, want %v", i, r.err, want[i])
		}
	}
	if got := queues(t, db); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("committed jobs in queues %v, want [a c]", got)
	}
	var notified []string
	for _, n := range *published {
		notified = append(notified, n.Queue)
	}
	if !slices.Equal(notified, []string{"a", "c"}) {
		t.Fatalf("notified queues %v, want [a c]", notified)
	}
}

func TestGroupOfOneRollsBack(t *testing.T) {
	w, db, published := groupWriter(t)
	boom := errors.New("boom")
	r := insertRequest(t.Context(), "a", boom)
	w.runGroup([]*request{r})
	if !errors.Is(r.err, boom) {
		t.Fatalf("err %v, want boom", r.err)
	}
	if got := queues(t, db); len(got) != 0 || len(*published) != 0 {
		t.Fatalf("a failed request left jobs %v and notifications %v", got, *published)
	}
}
