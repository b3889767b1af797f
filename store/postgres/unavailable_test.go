package postgres

import (
	"errors"
	"net/url"
	"testing"

	"github.com/rotahq/rota/store"
)

// An insert the server refuses for its own reasons — here a read-only server, as a standby or a
// database set read-only for maintenance is — says so with store.ErrUnavailable, so the API
// answers 503 instead of 500.
func TestReadOnlyServerIsUnavailable(t *testing.T) {
	schema := newSchema(t)
	openSchema(t, schema, WithAutoMigrate()) // migrated while writable
	u, err := url.Parse(testURL())
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("default_transaction_read_only", "on")
	u.RawQuery = q.Encode()
	ro := openURL(t, u.String(), schema)
	_, err = ro.Insert(t.Context(), []store.InsertParams{job("k")})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("insert on a read-only server: %v, want store.ErrUnavailable", err)
	}
}
