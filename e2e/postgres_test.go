package e2e

import (
	"net/url"
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

// newSchema returns a fresh schema name on the server at base, dropped with everything in it when
// the test ends, so tests never see each other's jobs or leases.
func newSchema(t *testing.T, base string) string {
	t.Helper()
	return pgtest.Schema(t, base)
}

// storeURL is the --store value for schema on the server at base.
func storeURL(t *testing.T, base, schema string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("PostgreSQL URL: %v", err)
	}
	q := u.Query()
	q.Set("schema", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
