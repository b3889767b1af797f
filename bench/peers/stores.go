package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	_ "modernc.org/sqlite" // the driver riversqlite is documented and tested with

	"github.com/rotahq/rota/bench"
	"github.com/rotahq/rota/store"
	rotaredis "github.com/rotahq/rota/store/redis"
)

// riverSQLite opens River on a new SQLite file under dir, set up the way River's own tests set it
// up: WAL and a pool of one connection (riversqlite's documentation recommends it; with more,
// River's concurrent statements fail with SQLITE_BUSY), and synchronous=NORMAL, as rota's
// default is: a sync at checkpoints, not at every commit, for both.
func riverSQLite(dir string) riverOpener[*sql.Tx] {
	return func(ctx context.Context) (riverdriver.Driver[*sql.Tx], string, func() error, error) {
		tmp, err := os.MkdirTemp(dir, "river-bench-")
		if err != nil {
			return nil, "", nil, err
		}
		db, err := sql.Open("sqlite", "file:"+tmp+"/river.db?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
		if err != nil {
			os.RemoveAll(tmp)
			return nil, "", nil, err
		}
		db.SetMaxOpenConns(1)
		cleanup := func() error { return errors.Join(db.Close(), os.RemoveAll(tmp)) }
		driver := riversqlite.New(db)
		if err := riverMigrate(ctx, driver, ""); err != nil {
			return nil, "", nil, errors.Join(err, cleanup())
		}
		return driver, "", cleanup, nil
	}
}

// riverPostgres opens River in a new schema of the database at url, with pgxpool's default pool
// size, and drops the schema afterwards.
func riverPostgres(url string) riverOpener[pgx.Tx] {
	return func(ctx context.Context) (riverdriver.Driver[pgx.Tx], string, func() error, error) {
		schema := "river_bench_" + randomHex(4)
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			return nil, "", nil, err
		}
		cleanup := func() error {
			pool.Close()
			return bench.DropSchema(context.Background(), url, schema)
		}
		if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return nil, "", nil, errors.Join(err, cleanup())
		}
		driver := riverpgxv5.New(pool)
		if err := riverMigrate(ctx, driver, schema); err != nil {
			return nil, "", nil, errors.Join(err, cleanup())
		}
		return driver, schema, cleanup, nil
	}
}

// riverMigrate applies River's own migrations, as `river migrate-up` does.
func riverMigrate[TTx any](ctx context.Context, driver riverdriver.Driver[TTx], schema string) error {
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: quietLogger, Schema: schema})
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// rotaRedisApart is bench.Redis for bench.RotaApart: the client inserts through a store of its
// own on the same namespace, with a connection pool of its own, as a producer in another process
// does. The node then hears of an insert through the namespace's Pub/Sub channel, not through
// the inserting store's wake-up of its own subscribers.
func rotaRedisApart(url string) func(ctx context.Context) (node, client store.Store, cleanup func() error, err error) {
	open := bench.Redis(url)
	return func(ctx context.Context) (store.Store, store.Store, func() error, error) {
		st, cleanup, err := open(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		client, err := rotaredis.Open(ctx, url, rotaredis.WithNamespace(st.(*rotaredis.Store).Namespace()), rotaredis.WithLogger(quietLogger))
		if err != nil {
			return nil, nil, nil, errors.Join(err, cleanup())
		}
		return st, client, func() error { return errors.Join(client.Close(), cleanup()) }, nil
	}
}
