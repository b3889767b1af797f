package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/rotahq/rota/store"
)

var _ store.Leaser = (*Store)(nil)

// AcquireLease takes lease name for owner until now + ttl if it is free or expired, or renews it
// if owner holds it. It runs in the writer, so that two acquirers, in this process or another,
// are decided one after the other under the write lock.
func (s *Store) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (store.Lease, bool, error) {
	var l store.Lease
	var held bool
	err := s.write(ctx, func(t *wtx) error {
		now := truncate(t.now)
		cur, err := getLease(t, name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			l = store.Lease{Name: name, Owner: owner, Token: 1, AcquiredAt: now}
		case err != nil:
			return err
		case cur.Owner == owner:
			l = cur // a renewal keeps the token
		case cur.Owner == "" || cur.ExpiresAt.Before(now):
			l = store.Lease{Name: name, Owner: owner, Token: cur.Token + 1, AcquiredAt: now}
		default:
			l, held = cur, false
			return nil
		}
		l.ExpiresAt, held = truncate(now.Add(ttl)), true
		_, err = t.exec(`INSERT INTO leases (name, owner, token, acquired_at, expires_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, token = excluded.token,
				acquired_at = excluded.acquired_at, expires_at = excluded.expires_at`,
			l.Name, l.Owner, l.Token, micros(l.AcquiredAt), micros(l.ExpiresAt))
		return err
	})
	if err != nil {
		return store.Lease{}, false, fmt.Errorf("sqlite: acquire lease %q: %w", name, err)
	}
	return l, held, nil
}

// ReleaseLease gives the lease up if owner holds it.
func (s *Store) ReleaseLease(ctx context.Context, name, owner string) error {
	err := s.write(ctx, func(t *wtx) error {
		_, err := t.exec(`UPDATE leases SET owner = '', expires_at = ? WHERE name = ? AND owner = ?`,
			micros(t.now), name, owner)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: release lease %q: %w", name, err)
	}
	return nil
}

// GetLease returns the lease as it is, expired or not.
func (s *Store) GetLease(ctx context.Context, name string) (store.Lease, error) {
	rows, err := s.db.QueryContext(ctx, leaseSQL, name)
	if err == nil {
		var l store.Lease
		if l, err = scanLease(rows); err == nil {
			return l, nil
		}
	}
	return store.Lease{}, fmt.Errorf("sqlite: get lease %q: %w", name, err)
}

const leaseSQL = `SELECT name, owner, token, acquired_at, expires_at FROM leases WHERE name = ?`

func getLease(t *wtx, name string) (store.Lease, error) {
	rows, err := t.query(leaseSQL, name)
	if err != nil {
		return store.Lease{}, err
	}
	return scanLease(rows)
}

// scanLease reads the one row of leaseSQL, or gives store.ErrNotFound, and closes rows.
func scanLease(rows *sql.Rows) (store.Lease, error) {
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return store.Lease{}, err
		}
		return store.Lease{}, store.ErrNotFound
	}
	var l store.Lease
	var acquired, expires int64
	if err := rows.Scan(&l.Name, &l.Owner, &l.Token, &acquired, &expires); err != nil {
		return store.Lease{}, err
	}
	l.AcquiredAt, l.ExpiresAt = fromMicros(acquired), fromMicros(expires)
	return l, rows.Close()
}
