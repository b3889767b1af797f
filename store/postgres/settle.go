package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// A completion resolves at most a bounded number of its ends' dependency edges in its own
// transaction (WithSettleBatch): a fan-out of ten thousand steps would otherwise release them
// all before the completion commits, none claimable meanwhile. What it leaves is parked in
// job_settling (migration 016) and settled in further transactions, each as bounded, before
// Complete returns; the first steps run while the rest are released.

// SettleBatchDefault is how many dependency edges one transaction resolves unless
// WithSettleBatch says otherwise: about 15 ms of the server's time for a fan-out's releases.
const SettleBatchDefault = 1000

// settleEnds is how many parked ends one settling transaction takes up.
const settleEnds = 100

// resolvePrefixSQL starts a transaction that resolves dependents itself (a completion, a
// settling): the pinned plans (pinPlanSQL), the bound on the dependency edges it resolves ($1,
// rota.settle_budget, read by resolve_dependents), and rota.resolving, which keeps the row
// trigger jobs_ended off the jobs it ends: the statements that follow resolve them, cascades
// included.
const resolvePrefixSQL = pinPlanSQL + `, set_config('rota.settle_budget', $1::bigint::text, true),
	set_config('rota.resolving', '1', true)`

// settleSQL settles up to $2 parked ends at the store's time and reports whether it took some
// and any is left.
const settleSQL = `SELECT {schema}.settle_parked($2, {now})`

// settleAll settles parked ends until none is left or every one left is held by another
// settler, each transaction under resolvePrefixSQL.
func (s *Store) settleAll(ctx context.Context) error {
	for {
		var more bool
		b := &pgx.Batch{}
		b.Queue(resolvePrefixSQL, s.cfg.settleBatch)
		b.Queue(s.sql(settleSQL), s.now(), settleEnds).QueryRow(func(r pgx.Row) error { return r.Scan(&more) })
		if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("settle parked dependents: %w", err)
		}
		if !more {
			return nil
		}
	}
}

// afterParked settles what a call parked before the call returns, so that its caller sees its
// dependents resolved, as when one transaction resolved them all. A failure is logged, not
// returned: the call itself committed, and the next rescue pass settles what is left (Rescue
// settles first).
func (s *Store) afterParked(ctx context.Context, call string) {
	if err := s.settleAll(ctx); err != nil {
		s.cfg.logger.Warn("rota: postgres settle failed; the next rescue settles what is left",
			"schema", s.cfg.schema, "after", call, "err", err)
	}
}
