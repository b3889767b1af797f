package completer

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

// signalHandler is a slog handler that reports each warning, so the test knows a write failed.
type signalHandler struct {
	slog.Handler
	warned chan struct{}
}

func (h signalHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		select {
		case h.warned <- struct{}{}:
		default:
		}
	}
	return h.Handler.Handle(ctx, r)
}

// TestOutcomeSurvivesAStoreThatRefusesWrites holds the database's write lock from another
// connection, as a busy neighbour process would, so the completer's writes fail; when the lock is
// released the outcome is recorded, not lost.
func TestOutcomeSurvivesAStoreThatRefusesWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "rota.db")
	st, err := sqlite.Open(ctx, path, sqlite.WithBusyTimeout(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Insert(ctx, []store.InsertParams{{Kind: "k", Queue: "q", Args: []byte(`{}`), MaxAttempts: 1}}); err != nil {
		t.Fatal(err)
	}
	jobs, err := st.Claim(ctx, store.ClaimParams{Queue: "q", Kinds: []string{"k"}, Max: 1, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v", err)
	}

	neighbour, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer neighbour.Close()
	lock, err := neighbour.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(`CREATE TABLE IF NOT EXISTS neighbour (x)`); err != nil {
		t.Fatal(err)
	}

	warned := make(chan struct{}, 1)
	logger := slog.New(signalHandler{Handler: slog.NewTextHandler(t.Output(), nil), warned: warned})
	c := New(st, clockwork.NewRealClock(), logger)
	applied := make(chan bool, 1)
	c.Add(store.Outcome{ID: jobs[0].ID, Fence: jobs[0].Fence, State: store.StateCompleted}, func(ok bool) { applied <- ok })
	drain := make(chan struct{})
	done := make(chan struct{})
	go func() { c.Run(ctx, drain); close(done) }()

	select {
	case <-warned:
	case <-time.After(10 * time.Second):
		t.Fatal("the write never failed: the lock did not hold")
	}
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	select {
	case ok := <-applied:
		if !ok {
			t.Fatal("outcome not applied after the store came back")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("outcome not recorded within 10s of the store coming back")
	}
	close(drain)
	<-done
	if row, _ := st.Get(ctx, jobs[0].ID); row.State != store.StateCompleted {
		t.Fatalf("job is %s", row.State)
	}
}
