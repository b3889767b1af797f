package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotahq/rota/store"
)

var (
	_ store.Leaser       = (*Store)(nil)
	_ store.NodeRegistry = (*Store)(nil)
)

// acquireLeaseSQL takes a free or expired lease, or renews the owner's own, in one statement.
// A renewal keeps the token; a lease changing hands gets a new one. When another owner holds
// the lease, the upsert changes nothing and the second branch returns the holder's lease, as
// the statement's snapshot sees it.
const acquireLeaseSQL = `
WITH taken AS (
	INSERT INTO {schema}.leases AS l (name, owner, token, acquired_at, expires_at)
	VALUES ($2, $3, nextval({lease_tokens}), {now}, {now} + $4 * interval '1 microsecond')
	ON CONFLICT (name) DO UPDATE SET
		owner = excluded.owner,
		token = CASE WHEN l.owner = excluded.owner THEN l.token ELSE excluded.token END,
		acquired_at = CASE WHEN l.owner = excluded.owner THEN l.acquired_at ELSE excluded.acquired_at END,
		expires_at = excluded.expires_at
	WHERE l.owner = excluded.owner OR l.owner = '' OR l.expires_at < excluded.acquired_at
	RETURNING name, owner, token, acquired_at, expires_at
)
SELECT name, owner, token, acquired_at, expires_at, true FROM taken
UNION ALL
SELECT name, owner, token, acquired_at, expires_at, false FROM {schema}.leases
WHERE name = $2 AND NOT EXISTS (SELECT 1 FROM taken)`

// AcquireLease takes lease name for owner until now + ttl if it is free or expired, or renews it
// if owner holds it.
func (s *Store) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (store.Lease, bool, error) {
	// The statement finds no row when a concurrent acquirer committed the lease after the
	// statement's snapshot was taken; the next statement sees it.
	for range 3 {
		var l store.Lease
		var held bool
		err := s.pool.QueryRow(ctx, s.sql(acquireLeaseSQL), s.now(), name, owner, ttl.Microseconds()).
			Scan(&l.Name, &l.Owner, &l.Token, &l.AcquiredAt, &l.ExpiresAt, &held)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return store.Lease{}, false, fmt.Errorf("postgres: acquire lease %q: %w", name, unavailable(err))
		}
		return l, held, nil
	}
	return store.Lease{}, false, fmt.Errorf("postgres: acquire lease %q: contended", name)
}

// ReleaseLease gives the lease up if owner holds it. The row stays, with no owner, so the next
// acquirer gets a new token.
func (s *Store) ReleaseLease(ctx context.Context, name, owner string) error {
	_, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.leases SET owner = '', expires_at = {now}
		WHERE name = $2 AND owner = $3`), s.now(), name, owner)
	if err != nil {
		return fmt.Errorf("postgres: release lease %q: %w", name, unavailable(err))
	}
	return nil
}

// GetLease returns the lease as it is, expired or not, or store.ErrNotFound.
func (s *Store) GetLease(ctx context.Context, name string) (store.Lease, error) {
	var l store.Lease
	err := s.pool.QueryRow(ctx, s.sql(`SELECT name, owner, token, acquired_at, expires_at
		FROM {schema}.leases WHERE name = $1`), name).
		Scan(&l.Name, &l.Owner, &l.Token, &l.AcquiredAt, &l.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Lease{}, fmt.Errorf("postgres: get lease %q: %w", name, unavailable(err))
	}
	return l, nil
}

// RegisterNode inserts or refreshes a node, stamping LastSeen with the store's time.
func (s *Store) RegisterNode(ctx context.Context, n store.NodeInfo) error {
	queues, kinds := n.Queues, n.Kinds
	if queues == nil {
		queues = []string{}
	}
	if kinds == nil {
		kinds = []string{}
	}
	_, err := s.pool.Exec(ctx, s.sql(`
		INSERT INTO {schema}.nodes (id, host, pid, version, queues, kinds, started_at, last_seen, register_every)
		VALUES ($2, $3, $4, $5, $6, $8, $7, {now}, $9)
		ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid,
			version = excluded.version, queues = excluded.queues, kinds = excluded.kinds,
			started_at = excluded.started_at, last_seen = excluded.last_seen, register_every = excluded.register_every`),
		s.now(), n.ID, n.Host, n.PID, n.Version, queues, n.StartedAt, kinds, int64(n.RegisterEvery))
	if err != nil {
		return fmt.Errorf("postgres: register node %q: %w", n.ID, unavailable(err))
	}
	return nil
}

// ListNodes returns every registered node, most recently seen first.
func (s *Store) ListNodes(ctx context.Context) ([]store.NodeInfo, error) {
	// The running jobs are counted in one pass over the index of running jobs, whose entries
	// hold the owner.
	rs, err := s.pool.Query(ctx, s.sql(`SELECT id, host, pid, version, queues, kinds, started_at, last_seen, register_every,
			coalesce(r.n, 0)
		FROM {schema}.nodes LEFT JOIN (SELECT owner, count(*) AS n FROM {schema}.jobs WHERE state = 'running' GROUP BY owner) r
			ON r.owner = nodes.id
		ORDER BY last_seen DESC, id`))
	if err != nil {
		return nil, fmt.Errorf("postgres: list nodes: %w", unavailable(err))
	}
	nodes, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (store.NodeInfo, error) {
		var n store.NodeInfo
		var every int64
		err := r.Scan(&n.ID, &n.Host, &n.PID, &n.Version, &n.Queues, &n.Kinds, &n.StartedAt, &n.LastSeen, &every, &n.Running)
		n.RegisterEvery = time.Duration(every)
		if len(n.Queues) == 0 {
			n.Queues = nil
		}
		if len(n.Kinds) == 0 {
			n.Kinds = nil
		}
		return n, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list nodes: %w", unavailable(err))
	}
	return nodes, nil
}

// DeregisterNode removes a node that stopped cleanly.
func (s *Store) DeregisterNode(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.nodes WHERE id = $1`), id); err != nil {
		return fmt.Errorf("postgres: deregister node %q: %w", id, unavailable(err))
	}
	return nil
}

// PruneNodes removes the nodes last seen before before.
func (s *Store) PruneNodes(ctx context.Context, before time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.nodes WHERE last_seen < $1`), before)
	if err != nil {
		return 0, fmt.Errorf("postgres: prune nodes: %w", unavailable(err))
	}
	return int(tag.RowsAffected()), nil
}

// Now returns the store's time: the database's now(), or the clock of WithClock.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var now time.Time
	if err := s.pool.QueryRow(ctx, s.sql(`SELECT {now}`), s.now()).Scan(&now); err != nil {
		return time.Time{}, fmt.Errorf("postgres: now: %w", unavailable(err))
	}
	return now, nil
}
