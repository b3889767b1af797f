package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store/postgres"
	"github.com/rotahq/rota/store/sqlite"
)

// Preloader is implemented by instances that can be filled, before a workload, with jobs that
// wait (Config.Queued) and jobs that finished (Config.Retained), to show what a workload costs on
// a big table rather than an empty one.
type Preloader interface {
	// Preload inserts queued jobs that are not due for a day, on the queue the workload uses, and
	// retained completed jobs, as a long retention keeps them. progress is told how many of the
	// two it has written so far.
	Preload(ctx context.Context, queued, retained int, progress func(done int)) error
}

// ErrNoPreload is returned for a system that cannot be preloaded.
var ErrNoPreload = errors.New("cannot be filled with queued or retained jobs")

// preloadBatch is how many jobs one preloading statement writes.
const preloadBatch = 10_000

// preload fills inst as cfg asks, reporting progress under the label "preload".
func preload(ctx context.Context, inst Instance, cfg Config) error {
	if cfg.Queued == 0 && cfg.Retained == 0 {
		return nil
	}
	p, ok := inst.(Preloader)
	if !ok {
		return ErrNoPreload
	}
	report := cfg.progress("preload", cfg.Queued+cfg.Retained)
	defer report.finish()
	if err := p.Preload(ctx, cfg.Queued, cfg.Retained, report.set); err != nil {
		return fmt.Errorf("preload %d queued and %d retained jobs: %w", cfg.Queued, cfg.Retained, err)
	}
	return nil
}

// Preload writes the retained jobs straight into the store's table, in the shape the pruner finds
// finished jobs in (rota has no call that makes a job completed without running it, and running
// ten million no-op jobs first would take longer than the measurement), and inserts the queued
// ones through the client, due in a day.
func (r *rotaInstance) Preload(ctx context.Context, queued, retained int, progress func(int)) error {
	done := 0
	for done < retained {
		n := min(preloadBatch*10, retained-done)
		if err := r.retain(ctx, n); err != nil {
			return err
		}
		done += n
		progress(done)
	}
	runAt := time.Now().Add(24 * time.Hour)
	params := make([]rota.InsertManyParams, 0, preloadBatch)
	for q := 0; q < queued; q += len(params) {
		params = params[:0]
		for i := q; i < min(q+preloadBatch, queued); i++ {
			params = append(params, rota.InsertManyParams{Args: Args{Seq: -1}, Opts: &rota.InsertOpts{RunAt: runAt}})
		}
		if _, err := r.client.InsertMany(ctx, params); err != nil {
			return err
		}
		progress(done + q + len(params))
	}
	return r.settle(ctx)
}

// retain writes n completed jobs.
func (r *rotaInstance) retain(ctx context.Context, n int) error {
	switch st := r.store.(type) {
	case *postgres.Store:
		_, err := st.Pool().Exec(ctx, fmt.Sprintf(`INSERT INTO %s.jobs
			(kind, queue, args, state, attempt, max_attempts, run_at, created_at, attempted_at, finalized_at)
			SELECT 'bench', 'default', '{"seq":-1}', 'completed', 1, 25, now(), now(), now(), now()
			FROM generate_series(1, $1)`, pgx.Identifier{st.Schema()}.Sanitize()), n)
		return err
	case *sqlite.Store:
		// The store keeps per-state counts in queue_counts in the transaction of every change.
		tx, err := st.DB().BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		now := time.Now().UnixMicro()
		if _, err := tx.ExecContext(ctx, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?)
			INSERT INTO jobs (kind, queue, args, priority, state, attempt, max_attempts, run_at, created_at, attempted_at, finalized_at)
			SELECT 'bench', 'default', '{"seq":-1}', 0, 'completed', 1, 25, ?, ?, ?, ? FROM c`, n, now, now, now, now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO queue_counts (queue, state, n) VALUES ('default', 'completed', ?)
			ON CONFLICT (queue, state) DO UPDATE SET n = n + excluded.n`, n); err != nil {
			return err
		}
		return tx.Commit()
	default:
		return fmt.Errorf("%T: retained jobs: %w", r.store, ErrNoPreload)
	}
}

// settle leaves a preloaded PostgreSQL table as a long-running one is: vacuumed (the visibility
// map set, so its pages are known all-visible), analyzed and checkpointed, so that the workload
// does not pay for writing out the preload's gigabytes.
func (r *rotaInstance) settle(ctx context.Context) error {
	if st, ok := r.store.(*postgres.Store); ok {
		return settlePostgres(ctx, st.Pool(), pgx.Identifier{st.Schema(), "jobs"}.Sanitize())
	}
	return nil
}

// settlePostgres vacuums, analyzes and checkpoints after a preload of table. CHECKPOINT takes a
// superuser or the pg_checkpoint role; without either the workload starts with the preload
// still to be written out, and a warning says so.
func settlePostgres(ctx context.Context, pool *pgxpool.Pool, table string) error {
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE `+table, pgx.QueryExecModeSimpleProtocol); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `CHECKPOINT`, pgx.QueryExecModeSimpleProtocol); err != nil {
		quietLogger.Warn("bench: cannot checkpoint after the preload; the workload pays for writing it out", "error", err)
	}
	return nil
}
