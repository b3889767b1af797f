package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/postgres"
	"github.com/rotahq/rota/store/sqlite"
)

// SQLite returns an Opener that creates each store in a new file under dir ("" for the system's
// temporary directory) and deletes it afterwards. The store keeps rota's defaults
// (synchronous=NORMAL: a commit survives a crash of the process, see sqlite.SynchronousDefault).
func SQLite(dir string) Opener {
	return func(ctx context.Context) (store.Store, func() error, error) {
		stores, cleanup, err := sqliteFile(ctx, dir, 1)
		if err != nil {
			return nil, nil, err
		}
		return stores[0], cleanup, nil
	}
}

// SQLiteApart is SQLite for a Target whose client opens the same file a second time, with
// connections of its own, as a producer in another process does: see RotaApart.
func SQLiteApart(dir string) func(ctx context.Context) (node, client store.Store, cleanup func() error, err error) {
	return func(ctx context.Context) (store.Store, store.Store, func() error, error) {
		stores, cleanup, err := sqliteFile(ctx, dir, 2)
		if err != nil {
			return nil, nil, nil, err
		}
		return stores[0], stores[1], cleanup, nil
	}
}

// sqliteFile opens n Stores on one new file under dir; cleanup closes them and deletes it.
func sqliteFile(ctx context.Context, dir string, n int) ([]store.Store, func() error, error) {
	tmp, err := os.MkdirTemp(dir, "rota-bench-")
	if err != nil {
		return nil, nil, err
	}
	var stores []store.Store
	cleanup := func() error {
		var errs []error
		for _, st := range slices.Backward(stores) {
			errs = append(errs, st.Close())
		}
		return errors.Join(append(errs, os.RemoveAll(tmp))...)
	}
	for range n {
		st, err := sqlite.Open(ctx, tmp+"/rota.db", sqlite.WithLogger(quietLogger))
		if err != nil {
			return nil, nil, errors.Join(err, cleanup())
		}
		stores = append(stores, st)
	}
	return stores, cleanup, nil
}

// Postgres returns an Opener that creates each store in a new schema of the database at url and
// drops the schema afterwards, so a benchmark never touches the database's other data.
func Postgres(url string) Opener {
	return func(ctx context.Context) (store.Store, func() error, error) {
		schema := "rota_bench_" + randomHex(4)
		drop := func() error { return DropSchema(context.Background(), url, schema) }
		st, err := postgres.Open(ctx, url, postgres.WithSchema(schema), postgres.WithAutoMigrate(), postgres.WithLogger(quietLogger))
		if err != nil {
			return nil, nil, errors.Join(err, drop())
		}
		return st, func() error { return errors.Join(st.Close(), drop()) }, nil
	}
}

// DropSchema removes schema and everything in it from the database at url.
func DropSchema(ctx context.Context, url, schema string) error {
	// A pool, not pgx.Connect: the URL may carry pool settings (pool_max_conns), which a single
	// connection would send to the server as unknown parameters.
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	_, err = pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// PostgresApart is Postgres for a Target whose client has a store of its own on the same schema,
// as a producer in another process has: see RotaApart.
func PostgresApart(url string) func(ctx context.Context) (node, client store.Store, cleanup func() error, err error) {
	return func(ctx context.Context) (store.Store, store.Store, func() error, error) {
		st, cleanup, err := Postgres(url)(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		schema := st.(*postgres.Store).Schema()
		client, err := postgres.Open(ctx, url, postgres.WithSchema(schema), postgres.WithLogger(quietLogger))
		if err != nil {
			return nil, nil, nil, errors.Join(err, cleanup())
		}
		return st, client, func() error { return errors.Join(client.Close(), cleanup()) }, nil
	}
}
