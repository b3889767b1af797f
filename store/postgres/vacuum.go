package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Vacuum thresholds: the jobs table is vacuumed once its dead row versions number
// VacuumDeadMinDefault and VacuumDeadShareDefault (in percent) of its live rows, whichever is
// more.
//
// Every claim leaves the claimed jobs' entries in the claim index behind as dead ones, at the
// head of their queue, and the next claims step over all of them until a vacuum removes them.
// Autovacuum looks at a table once a minute at most (autovacuum_naptime), and a busy queue
// leaves a million dead entries in that time: on the 2-core development machine claims then
// cost ten times what they cost on a clean index, and a drain of a million jobs ran at 10,000
// jobs/s instead of 24,000. A vacuum reads every index of the table whole, so its price grows
// with the table; the share keeps it a small part of the work at any size, the minimum keeps a
// small table from being vacuumed after every few claims.
const (
	VacuumDeadMinDefault   = 20_000
	VacuumDeadShareDefault = 5
)

// deadRowsSQL reads the jobs table's row counts from the statistics the server keeps anyway.
// They lag the table by up to a second, which is all the precision this needs. owned says
// whether this role may vacuum the table. The counts come from the functions behind the view
// pg_stat_user_tables, asked for this one table: the view computes every column of every table
// before the filter, about 10 ms of the server's CPU on an almost empty database, and a leader
// asks once a second, which stalled a chain of steps on a 2-core machine by 15-20 ms each time.
const deadRowsSQL = `SELECT pg_stat_get_dead_tuples(c.oid), pg_stat_get_live_tuples(c.oid), pg_has_role(c.relowner, 'USAGE')
	FROM pg_class c WHERE c.oid = {jobs_table}::regclass`

// Tidy vacuums the jobs table when claims would otherwise step over many dead index entries
// (see VacuumDeadMinDefault). SKIP_LOCKED leaves the table alone while another vacuum (an
// autovacuum, another process's Tidy) is at it. A role that does not own the table cannot vacuum
// it: Tidy says so once and then leaves it to autovacuum.
func (s *Store) Tidy(ctx context.Context) error {
	if s.cfg.vacuumDeadMin < 0 || s.vacuumRefused.Load() {
		return nil
	}
	var dead, live int64
	var owned bool
	if err := s.pool.QueryRow(ctx, s.sql(deadRowsSQL)).Scan(&dead, &live, &owned); err != nil {
		return fmt.Errorf("postgres: tidy: %w", unavailable(err))
	}
	if !owned {
		s.vacuumRefused.Store(true)
		s.cfg.logger.Warn("rota: this role does not own the jobs table, so it cannot vacuum it; claims slow down between autovacuum runs",
			"schema", s.cfg.schema)
		return nil
	}
	if dead < max(int64(s.cfg.vacuumDeadMin), live*VacuumDeadShareDefault/100) {
		return nil
	}
	// VACUUM cannot run inside a transaction block or as a prepared statement.
	if _, err := s.pool.Exec(ctx, s.sql(`VACUUM (SKIP_LOCKED) {schema}.jobs`), pgx.QueryExecModeSimpleProtocol); err != nil {
		return fmt.Errorf("postgres: tidy: vacuum: %w", unavailable(err))
	}
	return nil
}
