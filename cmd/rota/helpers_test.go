package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/syncbuf"
)

// syncBuffer holds what a running serve writes while the test reads it.
type syncBuffer = syncbuf.Buffer

// result is what one run of the command left behind.
type result struct {
	code           int
	stdout, stderr string
}

// env is a test's store and a way to run the command against it.
type env struct {
	t     *testing.T
	store string
	// startHint overrides how long --wait waits before suggesting `rota serve`.
	startHint time.Duration
}

// newEnv is a test's env on a new SQLite store, created (commands that read jobs refuse a store
// that does not exist).
func newEnv(t *testing.T) *env {
	e := newBareEnv(t)
	e.run("migrate").ok(t)
	return e
}

// newBareEnv is an env whose store does not exist yet.
func newBareEnv(t *testing.T) *env {
	t.Setenv("ROTA_STORE", "") // a developer's own store must not leak into tests
	return &env{t: t, store: "sqlite:" + filepath.Join(t.TempDir(), "rota.db")}
}

// run runs the command in-process with --store set to the test's store.
func (e *env) run(args ...string) result {
	e.t.Helper()
	return e.runCtx(e.t.Context(), args...)
}

func (e *env) runCtx(ctx context.Context, args ...string) result {
	var stdout, stderr syncBuffer
	a := newApp(&stdout, &stderr)
	if e.startHint > 0 {
		a.startHint = e.startHint
	}
	code := a.run(ctx, append([]string{"--store", e.store}, args...))
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// ok fails the test unless the run exited 0.
func (r result) ok(t *testing.T) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit code %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	return r
}

// fails checks that the run exited non-zero with wantErr on stderr.
func (r result) fails(t *testing.T, wantErr string) {
	t.Helper()
	if r.code == 0 {
		t.Fatalf("exit code 0, want a failure mentioning %q\nstdout: %s\nstderr: %s", wantErr, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, wantErr) {
		t.Fatalf("stderr does not mention %q:\n%s", wantErr, r.stderr)
	}
}

// decode parses the run's stdout as JSON into v.
func (r result) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("stdout is not JSON (%v):\n%s", err, r.stdout)
	}
}

// waitFor polls cond until it holds, failing after a generous bound: for state that another
// process or goroutine reaches on its own schedule, with no event to wait on.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 20s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
