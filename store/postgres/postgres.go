// Package postgres is rota's PostgreSQL store: many nodes on many machines share one database.
//
// Claims take a batch of jobs in one statement with FOR UPDATE SKIP LOCKED, so concurrent
// claimers never wait on each other and never get the same job; due scheduled and retryable jobs
// are claimed by the same statement, with no promotion pass. Outcomes are recorded in batches of
// one statement, large inserts go through COPY, and the schema is versioned by embedded
// migrations. The package never decides policy: it applies the transitions it is asked for.
//
// # Schema
//
// Every table lives in one schema, "rota" unless WithSchema says otherwise, so rota can share an
// application's database; two schemas in one database are two independent stores, whose
// notifications do not cross. Open does not change the schema: call Migrate (or `rota migrate`),
// or open WithAutoMigrate. PendingMigrations shows what Migrate would run. Args, metadata and
// results are stored as json, which keeps the producer's bytes.
//
// # Durability
//
// An insert is durable when it returns to the extent the server's settings make a commit
// durable: with the defaults (fsync on, synchronous_commit on) a returned insert survives a
// crash of the server.
//
// # Time
//
// The database's clock decides ownership: claims, leases, delays and expiry are judged by the
// server's now(), never by comparing the clocks of nodes. WithClock replaces it by a
// clockwork.Clock whose time is sent with every statement, for tests in virtual time.
//
// # Notifications
//
// Inserts NOTIFY the queue name on the channel "<schema>.insert", at most once per queue per
// transaction and, from one Store, once per queue per WithNotifyInterval; jobs reaching a final
// state are announced on "<schema>.final", hundreds of ids per NOTIFY. Each Store listens on one
// dedicated connection, opened by the first Subscribe and reconnected with backoff.
//
// # Unique keys
//
// A job holds its unique key while it is in one of its UniqueStates (by default the non-final
// states); a partial unique index over exactly those jobs makes concurrent inserts of one key
// race-proof. Use the same UniqueStates for every insert of a key: the holder's states decide
// whether it still holds the key. Supersede cancels a holder that has not started; a running
// holder runs on but hands its key to the new job; a final holder (its UniqueStates name a
// final state) is returned as a duplicate.
//
// # Limits
//
// A claim that a store.Limit applies to runs in a READ COMMITTED transaction: it locks the rows
// of its limits (FOR UPDATE, in one order, so claims sharing limits cannot deadlock), then
// counts their running jobs and recent starts in a statement that sees every claim committed
// under them before, claims within what is left, and records its starts. Claims under one limit
// take turns fleet-wide for those few statements; SKIP LOCKED alone would let two nodes both see
// room for the last slot. Claims no limit applies to keep the one-statement claim and never
// wait for a limit's lock: they pay a probe of the limits table, and an empty claim one more
// small statement to tell "no jobs" from "held back".
//
// # Dependencies
//
// A job that waits for others (store.InsertParams.DependsOn) is pending, with a count of what it
// still waits for and an edge from each of those in the table job_deps. Its insert locks what it
// names (FOR NO KEY UPDATE) before reading their states, so a dependency ending at that moment
// is seen ended or sees the new edge. Every way a job ends — an outcome, a cancel, a rescue, an
// expiry, a supersede, a schedule's change — resolves its dependents in the same transaction
// through one row trigger on the end of a job flagged has_dependents: it counts the
// dependency off, releases the dependent, or cancels it and, in a loop, what waits for that.
// Its WHEN clause keeps it off every other job, so ending a job nothing waits for costs what it
// did. A statement's ends are resolved together, their dependents locked in id order, so nodes
// completing jobs with dependents in common do not deadlock. Jobs of a workflow are found
// through an index of their own.
//
// # Inserting in the caller's transaction
//
// Store implements store.TxInserter. InsertTx accepts a pgx.Tx (from a pgx.Conn or a
// pgxpool.Pool) or a *sql.Tx from a database/sql DB opened on pgx's stdlib driver
// (github.com/jackc/pgx/v5/stdlib, e.g. stdlib.OpenDBFromPool(pool)):
//
//	tx, _ := db.BeginTx(ctx, nil)
//	// ... the business writes ...
//	_, err := s.InsertTx(ctx, tx, params)
//	// ... tx.Commit(): the jobs exist if and only if it commits.
//
// Other database/sql drivers (lib/pq) are not supported: the statements pass arrays as
// parameters the way pgx encodes them. Unique inserts in the caller's transaction should run at
// READ COMMITTED (the default): at REPEATABLE READ or SERIALIZABLE a concurrent insert of the same
// unique key makes the caller's transaction fail with a serialization error.
//
// # Connection poolers
//
// Behind PgBouncer in transaction mode, LISTEN does not work: open WithPollOnly, and the node
// polls. If the pooler does not support prepared statements, add
// default_query_exec_mode=exec to the URL.
package postgres

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
)

// SchemaDefault is the schema a Store uses unless WithSchema says otherwise.
const SchemaDefault = "rota"

// Store is a store.Store on PostgreSQL. It is also a store.Notifier, a store.TxInserter, a
// store.Leaser and a store.NodeRegistry.
type Store struct {
	pool     *pgxpool.Pool
	ownsPool bool
	cfg      config

	// sqlText expands the placeholders of the package's statements for this store's schema.
	sqlText *strings.Replacer
	// rendered caches sqlText's output per statement. Statements carry values only as
	// parameters, so they are a bounded set (List's filters combine into a few dozen), and
	// expanding one anew took a tenth of the CPU an insert costs the inserting process.
	rendered sync.Map // string -> string
	// insertChannel and finalChannel are the NOTIFY channels of this schema.
	insertChannel, finalChannel string

	gate     *notifyGate
	listener *listener
	// origin tells this Store's insert notifications from every other's (see parseInsertPayload).
	origin string

	// vacuumRefused is set once Tidy found that this role cannot vacuum the jobs table.
	vacuumRefused atomic.Bool

	// leaveParked, set by tests, makes Complete return without settling what it parked, as a
	// Store whose process died right after its completion committed.
	leaveParked bool

	closeOnce sync.Once
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.Notifier    = (*Store)(nil)
	_ store.TxInserter  = (*Store)(nil)
	_ store.QueueLoader = (*Store)(nil)
	_ store.Tidier      = (*Store)(nil)
)

// PoolMaxConnsDefault sizes the pool Open makes unless the URL sets pool_max_conns. pgxpool's own
// default, max(4, cores), made concurrent producers queue for a connection: ten goroutines
// inserting one job each ran 3,500–3,800 jobs/s on 4 connections and 4,100–5,000 on 16, on the
// 2-core development machine.
const PoolMaxConnsDefault = 16

// Open connects to the database at url (a PostgreSQL URL or key=value string, as pgx parses it)
// with a pool of its own, which Close closes. It checks that the schema is not newer than this
// build (store.ErrSchemaTooNew) and, WithAutoMigrate, migrates it.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	poolCfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", unavailable(err))
	}
	if !strings.Contains(url, "pool_max_conns") {
		poolCfg.MaxConns = max(poolCfg.MaxConns, PoolMaxConnsDefault)
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", unavailable(err))
	}
	s, err := New(pool, opts...)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.ownsPool = true
	if err := s.start(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// New returns a Store on a pool the caller owns and closes after the Store. It does no I/O: it
// neither checks nor migrates the schema.
func New(pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	cfg := config{schema: SchemaDefault, logger: slog.Default(), notifyInterval: NotifyIntervalDefault, vacuumDeadMin: VacuumDeadMinDefault,
		settleBatch: SettleBatchDefault}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.schema == "" {
		return nil, errors.New("postgres: empty schema name")
	}
	if len(cfg.schema) > maxIdentifierLen {
		return nil, fmt.Errorf("postgres: schema name %q longer than %d bytes", cfg.schema, maxIdentifierLen)
	}
	s := &Store{
		pool:          pool,
		cfg:           cfg,
		insertChannel: channelName(cfg.schema, "insert"),
		finalChannel:  channelName(cfg.schema, "final"),
		origin:        rand.Text()[:16],
	}
	s.sqlText = strings.NewReplacer(
		"{origin}", quoteLiteral("~"+s.origin+" "),
		"{schema}", pgx.Identifier{cfg.schema}.Sanitize(),
		"{now}", "coalesce($1::timestamptz, now())",
		"{insert_channel}", quoteLiteral(s.insertChannel),
		"{final_channel}", quoteLiteral(s.finalChannel),
		"{jobs_table}", quoteLiteral(pgx.Identifier{cfg.schema, "jobs"}.Sanitize()),
		"{jobs_id_seq}", quoteLiteral(pgx.Identifier{cfg.schema, "jobs_id_seq"}.Sanitize()),
		"{lease_tokens}", quoteLiteral(pgx.Identifier{cfg.schema, "lease_tokens"}.Sanitize()),
	)
	s.gate = newNotifyGate(clockwork.NewRealClock(), cfg.notifyInterval, s.notifyLater)
	s.listener = newListener(s)
	return s, nil
}

// start checks the schema version, or migrates when asked to.
func (s *Store) start(ctx context.Context) error {
	if s.cfg.autoMigrate {
		return s.Migrate(ctx)
	}
	version, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	pending, err := s.migrationsAfter(version)
	if err != nil {
		return err
	}
	if len(pending) > 0 {
		s.cfg.logger.Warn("rota: schema needs migrating", "schema", s.cfg.schema,
			"version", version, "latest", latestVersion())
	}
	return nil
}

// Pool returns the store's connection pool, for callers that want to begin a transaction for
// InsertTx on it.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Schema returns the schema the store's tables live in.
func (s *Store) Schema() string { return s.cfg.schema }

// Close stops the notification listener and, for a Store from Open, closes its pool.
// Subscriptions end. Jobs are not touched.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.listener.Close()
		s.gate.close()
		if s.ownsPool {
			s.pool.Close()
		}
	})
	return nil
}

// sql expands the placeholders of a statement: {schema} is the quoted schema, {now} the time
// parameter $1 (the fake clock's time, or NULL for the database's now()), {insert_channel}
// and {final_channel} the NOTIFY channels as string literals, and {origin} the prefix of this
// Store's insert notifications.
func (s *Store) sql(q string) string {
	if r, ok := s.rendered.Load(q); ok {
		return r.(string)
	}
	r := s.sqlText.Replace(q)
	s.rendered.Store(q, r)
	return r
}

// now is the $1 of every statement that reads the time: nil, so the database's now() is used,
// unless the store runs on a clock of its own.
func (s *Store) now() any {
	if s.cfg.clock == nil {
		return nil
	}
	return s.cfg.clock.Now()
}

// localNow is this process's idea of the store's time, for guesses that the database then
// checks (which queues an insert may wake).
func (s *Store) localNow() time.Time {
	if s.cfg.clock == nil {
		return time.Now()
	}
	return s.cfg.clock.Now()
}

// maxIdentifierLen is PostgreSQL's NAMEDATALEN - 1: longer names are truncated by the server.
const maxIdentifierLen = 63

func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
