package e2e

import (
	"testing"

	"github.com/rotahq/rota/internal/pgtest"
)

// inCI reports whether the tests run in CI, where a missing PostgreSQL is a failure: a green CI
// run must mean these tests ran. It reads CI as scripts/test does.
func inCI() bool { return pgtest.InCI() }

// unavailable skips t for want of a service, or fails it in CI.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	if inCI() {
		t.Fatalf("e2e: required in CI: "+format, args...)
	}
	t.Skipf("e2e: skipped: "+format, args...)
}

// sharedPostgres returns the URL of the PostgreSQL server the test suite shares, skipping (or in
// CI failing) t when it does not answer.
func sharedPostgres(t *testing.T) string {
	t.Helper()
	needBinary(t)
	return pgtest.URL(t)
}
