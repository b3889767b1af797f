package redis

import (
	"context"
	"errors"
	"testing"

	"github.com/rotahq/rota/store"
)

// An Insert whose context has ended fails with the context's error and inserts nothing, small
// calls (which go through the coalescer) as large ones, and as on the other stores: a call the
// coalescer sends alone is bounded by its caller's context.
func TestInsertHonoursItsContext(t *testing.T) {
	s := open(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	big := make([]store.InsertParams, coalesceMax+1)
	for i := range big {
		big[i] = job("big")
	}
	if _, err := s.Insert(ctx, big); !errors.Is(err, context.Canceled) {
		t.Errorf("Insert of %d jobs with a cancelled context = %v, want context.Canceled", len(big), err)
	}
	res, err := s.Insert(ctx, []store.InsertParams{job("small")})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Insert of 1 job with a cancelled context = %d results, %v; want context.Canceled", len(res), err)
	}
	rows, err := s.List(t.Context(), store.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		t.Errorf("job %d (kind %s) inserted by a call whose context was cancelled", r.ID, r.Kind)
	}
}
