package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rotahq/rota/store"
)

var _ store.NodeRegistry = (*Store)(nil)

// RegisterNode inserts or refreshes a node, stamping LastSeen with the store's clock.
func (s *Store) RegisterNode(ctx context.Context, n store.NodeInfo) error {
	queues, kinds := n.Queues, n.Kinds
	if queues == nil {
		queues = []string{}
	}
	if kinds == nil {
		kinds = []string{}
	}
	err := s.write(ctx, func(t *wtx) error {
		_, err := t.exec(`INSERT INTO nodes (id, host, pid, version, queues, kinds, started_at, last_seen, register_every)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid,
				version = excluded.version, queues = excluded.queues, kinds = excluded.kinds,
				started_at = excluded.started_at, last_seen = excluded.last_seen, register_every = excluded.register_every`,
			n.ID, n.Host, n.PID, n.Version, jsonText(queues), jsonText(kinds), micros(n.StartedAt), micros(t.now), int64(n.RegisterEvery))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: register node %q: %w", n.ID, err)
	}
	return nil
}

// ListNodes returns every registered node, most recently seen first.
func (s *Store) ListNodes(ctx context.Context) ([]store.NodeInfo, error) {
	// The running jobs are counted in one pass over the index of running jobs, whose entries
	// hold the owner.
	rows, err := s.db.QueryContext(ctx, `SELECT id, host, pid, version, queues, kinds, started_at, last_seen, register_every,
			coalesce(r.n, 0)
		FROM nodes LEFT JOIN (SELECT owner, count(*) AS n FROM jobs WHERE state = 'running' GROUP BY owner) r ON r.owner = nodes.id
		ORDER BY last_seen DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list nodes: %w", err)
	}
	defer rows.Close()
	var out []store.NodeInfo
	for rows.Next() {
		var n store.NodeInfo
		var queues, kinds string
		var started, seen, every int64
		if err := rows.Scan(&n.ID, &n.Host, &n.PID, &n.Version, &queues, &kinds, &started, &seen, &every, &n.Running); err != nil {
			return nil, fmt.Errorf("sqlite: list nodes: %w", err)
		}
		if err := json.Unmarshal([]byte(queues), &n.Queues); err != nil {
			return nil, fmt.Errorf("sqlite: list nodes: node %q: queues: %w", n.ID, err)
		}
		if err := json.Unmarshal([]byte(kinds), &n.Kinds); err != nil {
			return nil, fmt.Errorf("sqlite: list nodes: node %q: kinds: %w", n.ID, err)
		}
		if len(n.Queues) == 0 {
			n.Queues = nil
		}
		if len(n.Kinds) == 0 {
			n.Kinds = nil
		}
		n.StartedAt, n.LastSeen, n.RegisterEvery = fromMicros(started), fromMicros(seen), time.Duration(every)
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list nodes: %w", err)
	}
	return out, nil
}

// DeregisterNode removes a node that stopped cleanly.
func (s *Store) DeregisterNode(ctx context.Context, id string) error {
	err := s.write(ctx, func(t *wtx) error {
		_, err := t.exec(`DELETE FROM nodes WHERE id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: deregister node %q: %w", id, err)
	}
	return nil
}

// PruneNodes removes the nodes last seen before before.
func (s *Store) PruneNodes(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(t *wtx) error {
		r, err := t.exec(`DELETE FROM nodes WHERE last_seen < ?`, micros(before))
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: prune nodes: %w", err)
	}
	return int(n), nil
}

// Now returns the store's time: the host's clock, or the one of WithClock. Processes sharing the
// file share the host's clock.
func (s *Store) Now(context.Context) (time.Time, error) { return s.clk.Now(), nil }
