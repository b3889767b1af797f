package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/rotahq/rota/store"
)

// AcquireLease takes, renews or reports the lease name in one script; expiry is judged by the
// store's time, never by a Redis key TTL.
func (s *Store) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (store.Lease, bool, error) {
	v, err := s.run(ctx, scriptLeaseAcquire, name, owner, ttl.Microseconds())
	if err != nil {
		return store.Lease{}, false, err
	}
	r, _ := v.([]any)
	if len(r) != 5 {
		return store.Lease{}, false, fmt.Errorf("redis: acquire lease: unexpected reply %v", v)
	}
	l, err := decodeLease(name, r[1:])
	if err != nil {
		return store.Lease{}, false, fmt.Errorf("redis: acquire lease: %w", err)
	}
	return l, toInt(r[0]) == 1, nil
}

// ReleaseLease gives the lease up if owner holds it. The lease stays, without an owner, so the
// next holder's token is larger.
func (s *Store) ReleaseLease(ctx context.Context, name, owner string) error {
	_, err := s.run(ctx, scriptLeaseRelease, name, owner)
	return err
}

// GetLease returns the lease, or store.ErrNotFound when nobody ever took it.
func (s *Store) GetLease(ctx context.Context, name string) (store.Lease, error) {
	v, err := s.run(ctx, scriptLeaseGet, name)
	if err != nil {
		return store.Lease{}, err
	}
	r, _ := v.([]any)
	if len(r) != 4 || r[1] == nil {
		return store.Lease{}, fmt.Errorf("redis: get lease %q: %w", name, store.ErrNotFound)
	}
	l, err := decodeLease(name, r)
	if err != nil {
		return store.Lease{}, fmt.Errorf("redis: get lease: %w", err)
	}
	return l, nil
}

// decodeLease reads owner, token, acquired, expires.
func decodeLease(name string, r []any) (store.Lease, error) {
	tok, err := strconv.ParseInt(toStr(r[1]), 10, 64)
	if err != nil {
		return store.Lease{}, fmt.Errorf("lease %s: token %q", name, toStr(r[1]))
	}
	l := store.Lease{Name: name, Owner: toStr(r[0]), Token: tok}
	if l.AcquiredAt, err = fromMicros(toStr(r[2])); err != nil {
		return store.Lease{}, err
	}
	if l.ExpiresAt, err = fromMicros(toStr(r[3])); err != nil {
		return store.Lease{}, err
	}
	return l, nil
}
