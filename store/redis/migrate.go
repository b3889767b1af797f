package redis

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"
)

// Migrate writes the namespace's meta key (its version and a random identity) if it has none.
// It is idempotent and safe to run from several processes at once: the script runs alone. It
// fails with store.ErrSchemaTooNew on a namespace written by a newer build, and refuses one
// that holds jobs but lost its meta key (a partial loss, in which ids would repeat).
func (s *Store) Migrate(ctx context.Context) error {
	_, err := s.run(ctx, scriptMigrate, rand.Text())
	return err
}

// Identity returns the random id Migrate wrote. A flushed namespace has none (ErrNotMigrated)
// until it is migrated again, with a new one, so leases taken before prove nothing.
func (s *Store) Identity(ctx context.Context) (string, error) {
	v, err := s.run(ctx, scriptIdentity)
	if err != nil {
		return "", err
	}
	id := toStr(v)
	if id == "" {
		return "", fmt.Errorf("redis: identity: namespace %q: %w", s.cfg.namespace, ErrNotMigrated)
	}
	return id, nil
}

// Now returns the store's time: Redis' TIME, or the clock's WithClock.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if s.cfg.clock != nil {
		return truncMicros(s.cfg.clock.Now()), nil
	}
	v, err := s.run(ctx, scriptNow)
	if err != nil {
		return time.Time{}, err
	}
	return fromMicros(toStr(v))
}
