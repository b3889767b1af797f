package rota

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// ErrInvalid is wrapped by every error about input refused as given, a list's filters and a
// limit's settings included: a caller tells its own mistakes from a store's failure with
// errors.Is(err, rota.ErrInvalid).
func TestRefusedListFiltersAndLimitsWrapErrInvalid(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(epoch)
	c := NewClient(openStore(t, clock), &ClientConfig{Clock: clock})
	_, err := c.List(ctx, ListParams{CreatedAfter: epoch, CreatedBefore: epoch.Add(-time.Hour)})
	if err == nil || !errors.Is(err, ErrInvalid) {
		t.Errorf("List with CreatedAfter after CreatedBefore: %v; want an error wrapping ErrInvalid", err)
	}
	_, err = c.List(ctx, ListParams{ArgsValue: "1"})
	if err == nil || !errors.Is(err, ErrInvalid) {
		t.Errorf("List with an args value and no path: %v; want an error wrapping ErrInvalid", err)
	}
	err = c.SetLimit(ctx, Limit{Scope: LimitQueue, Name: "q", MaxRunning: -1})
	if err == nil || !errors.Is(err, ErrInvalid) {
		t.Errorf("SetLimit with MaxRunning -1: %v; want an error wrapping ErrInvalid", err)
	}
	if _, err := NewNode(Config{Store: c.Store()}); err == nil || !errors.Is(err, ErrInvalid) {
		t.Errorf("NewNode without workers: %v; want an error wrapping ErrInvalid", err)
	}
}
