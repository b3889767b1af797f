package rota

import (
	"context"
	"errors"
	"testing"

	"github.com/jonboulle/clockwork"
)

// UniqueOpts.ByState takes only states that exist: a typo would make a key that holds in no
// state, and every insert new.
func TestUniqueByStateUnknownStateRefused(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(epoch)
	c := NewClient(openStore(t, clock), &ClientConfig{Clock: clock})
	opts := &InsertOpts{Unique: &UniqueOpts{ByArgs: true, ByState: []State{"avaliable", "runing"}}}
	first, err := c.Insert(ctx, testArgs{N: 1}, opts)
	if errors.Is(err, ErrInvalid) {
		return // refused as given: what is wanted
	}
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Insert(ctx, testArgs{N: 1}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Fatalf("unique insert with unknown states %v accepted; second insert duplicate=%v (ids %d, %d): uniqueness silently off",
		opts.Unique.ByState, second.Duplicate, first.Job.ID, second.Job.ID)
}
