package postgres

import (
	"context"
	"database/sql"
	"reflect"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// querier runs the insert path's statements on whatever the insert runs in: the store's pool, a
// pgx.Tx, or a caller's *sql.Tx. The rest of the package speaks pgx directly.
type querier interface {
	query(ctx context.Context, sql string, args ...any) (rows, error)
	// copyFrom is COPY FROM STDIN, or nil where the connection cannot COPY (database/sql).
	copyFrom() copyFunc
	// heldBack collects the queues whose NOTIFY the gate held back, for Insert's own statements:
	// Insert announces its jobs to the Store's own subscribers and owes the held-back NOTIFYs
	// once it committed. Nil for a caller's transaction (InsertTx), whose commit the Store does
	// not see.
	heldBack() *[]string
}

type copyFunc func(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)

// pgxConn is what *pgxpool.Pool, *pgx.Conn and pgx.Tx have in common.
type pgxConn interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

type pgxQuerier struct {
	c pgxConn
	// canCopy is false for the pool: a COPY must share the transaction of the statements around it.
	canCopy bool
	// owed is heldBack's: set by Insert, nil otherwise.
	owed *[]string
}

func (q pgxQuerier) heldBack() *[]string { return q.owed }

func (q pgxQuerier) query(ctx context.Context, sql string, args ...any) (rows, error) {
	return q.c.Query(ctx, sql, args...)
}

func (q pgxQuerier) copyFrom() copyFunc {
	if !q.canCopy {
		return nil
	}
	return q.c.CopyFrom
}

// sqlQuerier runs statements in a database/sql transaction on pgx's stdlib driver, which passes
// parameters to pgx unchanged, so the same statements and parameters work.
type sqlQuerier struct {
	tx *sql.Tx
	m  *pgtype.Map
}

func (q sqlQuerier) query(ctx context.Context, sql string, args ...any) (rows, error) {
	r, err := q.tx.QueryContext(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return &sqlRows{Rows: r, m: q.m}, nil
}

func (sqlQuerier) copyFrom() copyFunc { return nil }

func (sqlQuerier) heldBack() *[]string { return nil }

type sqlRows struct {
	*sql.Rows
	m *pgtype.Map
}

func (r *sqlRows) Close() { r.Rows.Close() }

// Scan reads arrays through pgx's type map: database/sql cannot scan a PostgreSQL array into a Go
// slice by itself, but it handles every other destination the package uses.
func (r *sqlRows) Scan(dest ...any) error {
	wrapped := make([]any, len(dest))
	for i, d := range dest {
		wrapped[i] = d
		if t := reflect.TypeOf(d); t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Slice &&
			t.Elem().Elem().Kind() != reflect.Uint8 {
			wrapped[i] = r.m.SQLScanner(d)
		}
	}
	return r.Rows.Scan(wrapped...)
}
