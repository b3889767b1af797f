package redis

import (
	"testing"

	"github.com/rotahq/rota/store"
)

// The library remembers which kinds it named for a queue, so that an insert of a known kind
// makes no call for it (addKind). A namespace whose keys were all deleted, then migrated again,
// has its kinds named again by its first insert: QueueStats finds the queue's oldest available
// job at the heads of the ready sets of the kinds named there.
func TestKindsNamedAgainAfterFlush(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	insert := func() {
		t.Helper()
		if _, err := s.Insert(ctx, []store.InsertParams{job("k")}); err != nil {
			t.Fatal(err)
		}
	}
	insert()
	insert() // remembered now: this one made no call for the kind
	keys, err := s.rdb.Keys(ctx, s.prefix+"*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys of the namespace: %v, %v", keys, err)
	}
	if err := s.rdb.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	insert()
	if ok, err := s.rdb.SIsMember(ctx, s.prefix+"kq:default", "k").Result(); err != nil || !ok {
		t.Fatalf("kind k named in kq:default after the flush: %v, %v; want true", ok, err)
	}
	stats, err := s.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range stats {
		if q.Queue == "default" {
			if q.Counts[store.StateAvailable] != 1 || q.OldestAvailable.IsZero() {
				t.Fatalf("default: %+v, want one available job and its time", q)
			}
			return
		}
	}
	t.Fatalf("QueueStats = %+v, want the default queue", stats)
}
