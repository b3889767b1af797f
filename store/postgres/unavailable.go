package postgres

import (
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/rotahq/rota/store"
)

// unavailable marks err with store.ErrUnavailable when it is the server's trouble and may pass: a
// connection that could not be made or was lost, a full disk, a server shutting down or in
// recovery, a read-only transaction (a standby), a lock or statement timeout, a deadlock. Callers answer 503 then, not 500.
func unavailable(err error) error {
	if err == nil || errors.Is(err, store.ErrUnavailable) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code[:2] == "08", // connection exception
			pgErr.Code[:2] == "53",                                              // insufficient resources: disk full, out of memory, too many connections
			pgErr.Code == "25006",                                               // read_only_sql_transaction: a standby, or default_transaction_read_only
			pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", // shutting down, cannot connect now
			// Waits the server gave up: a lock held past lock_timeout, a statement past
			// statement_timeout, a deadlock or serialization failure. Nothing was written and
			// the same call may well succeed: SQLite's SQLITE_BUSY, not a refusal.
			pgErr.Code == "55P03", pgErr.Code == "57014", pgErr.Code == "40P01", pgErr.Code == "40001":
			return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
		}
		return err
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	// A connection that ended mid-reply reads as an EOF, not as a network error.
	if errors.As(err, &connErr) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}
