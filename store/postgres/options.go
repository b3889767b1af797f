package postgres

import (
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"
)

// NotifyIntervalDefault is how long, at least, an inserting Store waits between two NOTIFYs for
// one queue. See WithNotifyInterval.
const NotifyIntervalDefault = time.Millisecond

type config struct {
	schema         string
	clock          clockwork.Clock
	logger         *slog.Logger
	pollOnly       bool
	autoMigrate    bool
	notifyInterval time.Duration
	vacuumDeadMin  int
	settleBatch    int
}

// Option configures a Store.
type Option func(*config)

// WithSchema puts the store's tables in schema name instead of SchemaDefault ("rota"). Stores
// on different schemas of one database are independent.
func WithSchema(name string) Option { return func(c *config) { c.schema = name } }

// WithClock makes the store read the time from clock instead of the database's now(): every
// statement that needs the time sends clock.Now(). It is meant for tests in virtual time; in
// production the database's clock must decide, since it is the one clock all nodes share.
// Defaults to nil (the database's clock).
func WithClock(clock clockwork.Clock) Option { return func(c *config) { c.clock = clock } }

// WithLogger sets where the store logs (listener reconnects, migrations). Defaults to
// slog.Default().
func WithLogger(logger *slog.Logger) Option {
	return func(c *config) {
		if logger != nil {
			c.logger = logger
		}
	}
}

// WithPollOnly keeps the store from holding a LISTEN connection, for connection poolers in
// transaction mode (PgBouncer), where LISTEN does not work. Subscribe then delivers nothing and
// nodes rely on polling. Inserts still NOTIFY, for nodes that do listen.
func WithPollOnly() Option { return func(c *config) { c.pollOnly = true } }

// WithAutoMigrate makes Open migrate the schema. Without it, Open only checks the schema is not
// newer than this build, and migrating is an explicit step (Migrate, `rota migrate`).
func WithAutoMigrate() Option { return func(c *config) { c.autoMigrate = true } }

// WithNotifyInterval sets how long, at least, the store waits between two NOTIFYs for one queue.
// PostgreSQL serialises the commits of all transactions that NOTIFY (a database-wide lock), so
// a NOTIFY per insert caps the insert rate of the whole database. Inserts within the interval
// after a NOTIFY send none; one NOTIFY follows when the interval ends, so an idle node still wakes
// within about the interval. Zero notifies on every insert transaction. Defaults to
// NotifyIntervalDefault (1 ms).
func WithNotifyInterval(d time.Duration) Option {
	return func(c *config) { c.notifyInterval = max(d, 0) }
}

// WithVacuumDeadMin sets the fewest dead row versions at which Tidy vacuums the jobs table
// (VacuumDeadMinDefault unless set; see there). A negative n turns Tidy off, leaving the table
// to autovacuum alone.
func WithVacuumDeadMin(n int) Option { return func(c *config) { c.vacuumDeadMin = n } }

// WithSettleBatch sets how many dependency edges a completion resolves (dependents released,
// counted off or cancelled) in its own transaction; what is left is settled in further
// transactions, each as bounded, before Complete returns. n <= 0 is SettleBatchDefault.
func WithSettleBatch(n int) Option {
	return func(c *config) {
		if n <= 0 {
			n = SettleBatchDefault
		}
		c.settleBatch = n
	}
}
