// Package pgtest gives tests a PostgreSQL database to work in: the server scripts/test makes sure
// of, and a fresh schema per test, dropped when the test ends, so tests of every package can run
// in parallel on one database without seeing each other's rows.
//
// Outside CI a missing server skips the test with a reason; in CI (CI=true) it fails it, so a
// green CI run means every PostgreSQL test ran.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	neturl "net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// URLDefault is the server scripts/postgres.sh makes sure of when ROTA_TEST_POSTGRES_URL is unset.
const URLDefault = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// InCI reports whether tests run in CI, read as scripts/test reads it.
func InCI() bool {
	v := os.Getenv("CI")
	return v == "true" || v == "1"
}

// URL returns the test server's URL after checking that it answers.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("ROTA_TEST_POSTGRES_URL")
	if url == "" {
		url = URLDefault
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		if InCI() {
			t.Fatalf("PostgreSQL is required in CI: %v", err)
		}
		t.Skipf("no PostgreSQL at ROTA_TEST_POSTGRES_URL or %s (scripts/postgres.sh starts one): %v", URLDefault, err)
	}
	conn.Close(ctx)
	return url
}

// Schema returns a fresh schema name on the server at url, dropped with everything in it when the
// test ends (after the cleanups registered later, such as closing stores, have run).
func Schema(t testing.TB, url string) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "rota_test_" + hex.EncodeToString(b)
	Drop(t, url, schema)
	return schema
}

// Drop drops schema with everything in it when the test ends.
func Drop(t testing.TB, url, schema string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
}

// StoreURL is url with the schema query parameter that rota's store URLs (--store) read.
func StoreURL(t testing.TB, url, schema string) string {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatalf("PostgreSQL URL %q: %v", url, err)
	}
	q := u.Query()
	q.Set("schema", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
