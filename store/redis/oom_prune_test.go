package redis

import (
	"context"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/redistest"
	"github.com/rotahq/rota/store"
)

// With memory full (noeviction, as docs/operations.md asks), retention is how a namespace gives
// memory back: Prune (and Delete) run as functions Redis lets run out of memory (allow-oom),
// where it refuses every write that adds data.
func TestPruneUnderMemoryPressure(t *testing.T) {
	url, _ := redistest.Server(t)
	s := openURL(t, url, "oomprune", WithAutoMigrate())
	ctx := t.Context()
	res, err := s.Insert(ctx, []store.InsertParams{job("k")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, res[0].Job.ID); err != nil {
		t.Fatal(err)
	}
	c := redistest.Client(t, url)
	if err := c.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.ConfigSet(context.Background(), "maxmemory", "0") })
	n, err := s.Prune(ctx, store.PruneParams{States: []store.State{store.StateCancelled}, Before: time.Now().Add(time.Hour)})
	if err != nil || n != 1 {
		t.Errorf("Prune with memory full = %d, %v; want 1 job deleted (pruning frees memory)", n, err)
	}
}
