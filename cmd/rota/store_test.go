package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rotahq/rota/internal/redistest"

	"github.com/rotahq/rota/internal/rediskeys"
)

func TestUnopenableStore(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	for store, want := range map[string]string{
		"sqlite:" + filepath.Join(dir, "missing", "rota.db"): "directory " + filepath.Join(dir, "missing") + " does not exist",
		filepath.Join(file, "rota.db"):                       file + " is not a directory",
		"sqlite:" + dir:                                      dir + " is a directory, not a SQLite file",
		"rediss://localhost:6379/0?bogus=1":                  "not a valid redis:// or rediss:// URL",
		"mysql://localhost/db":                               `no store registered for scheme "mysql"`,
	} {
		e := newEnv(t)
		e.store = store
		e.run("jobs", "list").fails(t, want)
		e.run("enqueue", "exec", "--", "true").fails(t, want)
		e.run("serve").fails(t, want)
	}
}

func TestStoreFromEnvironment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "env.db")
	t.Setenv("ROTA_STORE", "sqlite:"+path)
	var stdout, stderr syncBuffer
	if code := newApp(&stdout, &stderr).run(t.Context(), []string{"enqueue", "exec", "--", "true"}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("ROTA_STORE was not used: %v", err)
	}
}

func TestMigrateSQLite(t *testing.T) {
	e := newBareEnv(t)
	path := strings.TrimPrefix(e.store, "sqlite:")
	out := e.run("migrate", "--dry-run").ok(t).stdout
	if !strings.Contains(out, "would create the SQLite store") {
		t.Fatalf("dry run: %q", out)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a dry run created the store: %v", err)
	}
	if out := e.run("migrate").ok(t).stdout; !strings.Contains(out, "is at schema version") {
		t.Fatalf("migrate: %q", out)
	}
	if out := e.run("migrate", "--dry-run").ok(t).stdout; !strings.Contains(out, "would bring the SQLite store") {
		t.Fatalf("dry run on an existing store: %q", out)
	}
}

func TestVersion(t *testing.T) {
	e := newEnv(t)
	if out := e.run("version").ok(t).stdout; !strings.HasPrefix(out, "rota ") || !strings.Contains(out, "go1.") {
		t.Fatalf("version: %q", out)
	}
	var v versionInfo
	e.run("-o", "json", "version").ok(t).decode(t, &v)
	if v.Version == "" || v.Go == "" {
		t.Fatalf("version JSON: %+v", v)
	}
}

// A Redis namespace is migrated by `rota migrate`, as a PostgreSQL schema is; the commands then
// work on it.
func TestMigrateRedis(t *testing.T) {
	url := redistest.URL(t)
	ns := redistest.Namespace(t, url)
	e := newEnv(t)
	e.store = redistest.StoreURL(t, url, ns)
	if out := e.run("migrate", "--dry-run").ok(t).stdout; !strings.Contains(out, "would bring the redis store") {
		t.Fatalf("dry run: %q", out)
	}
	e.run("enqueue", "report").fails(t, "not migrated")
	r := e.run("migrate").ok(t)
	if !strings.Contains(r.stdout, "is up to date (identity ") {
		t.Fatalf("migrate: %q", r.stdout)
	}
	if strings.Contains(r.stderr, "needs migrating") {
		t.Fatalf("migrate warns that the store needs migrating while it migrates it:\n%s", r.stderr)
	}
	e.run("enqueue", "report", "--args", `{"month":"2026-11"}`).ok(t)
	if out := e.run("jobs", "list").ok(t).stdout; !strings.Contains(out, "1   available  report") {
		t.Fatalf("jobs on the migrated namespace:\n%s", out)
	}
	keys, err := redistest.Client(t, url).Keys(t.Context(), rediskeys.Prefix(ns)+"*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("the job is not under the URL's namespace %s: %v, %d keys", ns, err, len(keys))
	}
}
