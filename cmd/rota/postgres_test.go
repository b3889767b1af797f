package main

import (
	"strings"
	"testing"

	"github.com/rotahq/rota/internal/pgtest"
)

// postgresEnv returns an env whose store is a fresh schema of the test database, dropped when the
// test ends. Without a reachable server the test skips, except in CI, where it fails.
func postgresEnv(t *testing.T) *env {
	t.Helper()
	base := pgtest.URL(t)
	e := newEnv(t)
	e.store = pgtest.StoreURL(t, base, pgtest.Schema(t, base))
	return e
}

func TestPostgresMigrateAndRun(t *testing.T) {
	e := postgresEnv(t)
	dry := e.run("migrate", "--dry-run").ok(t).stdout
	for _, want := range []string{"would bring postgres://", "(schema rota_test_", "from schema version 0", "-- migration 001_jobs", "CREATE TABLE"} {
		if !strings.Contains(dry, want) {
			t.Fatalf("dry run does not show %q:\n%s", want, dry)
		}
	}
	// The dry run changed nothing: the store is still unusable.
	for _, args := range [][]string{{"enqueue", "exec", "--", "true"}, {"jobs", "list"}, {"serve"}} {
		e.run(args...).fails(t, "is at version 0 and this build needs")
	}

	r := e.run("migrate").ok(t)
	if !strings.Contains(r.stdout, "is at schema version") {
		t.Fatalf("migrate: %q", r.stdout)
	}
	if strings.Contains(r.stderr, "needs migrating") {
		t.Fatalf("migrate warns that the store needs migrating while it migrates it:\n%s", r.stderr)
	}
	if out := e.run("migrate", "--dry-run").ok(t).stdout; !strings.Contains(out, "up to date") {
		t.Fatalf("dry run after migrating: %q", out)
	}
	e.run("migrate").ok(t) // again: nothing to do

	startServe(t, e)
	r = e.run("enqueue", "exec", "--wait", "--timeout", "30s", "--", "echo", "hello from postgres").ok(t)
	if r.stdout != "hello from postgres\n" {
		t.Fatalf("stdout = %q; stderr %q", r.stdout, r.stderr)
	}
	if out := e.run("jobs", "list").ok(t).stdout; !strings.Contains(out, "completed") {
		t.Fatalf("list:\n%s", out)
	}
}
