package httpapi_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/httpapi"
	"github.com/rotahq/rota/store/sqlite"
)

// An insert the store cannot write is 503 with the store's reason, not 500: here another
// process holds the database's write lock for longer than the store waits for it.
func TestInsertTheStoreCannotWriteIs503(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rota.db")
	st, err := sqlite.Open(context.Background(), path, sqlite.WithLogger(quiet), sqlite.WithBusyTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h, err := httpapi.New(httpapi.Config{Client: rota.NewClient(st, &rota.ClientConfig{Logger: quiet}), Token: token, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	s := &server{url: ts.URL}
	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	lock, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	s.wantError(t, "POST", "/v1/jobs", `{"kind":"greet"}`, http.StatusServiceUnavailable, "unavailable", "locked")
	if _, err := lock.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	s.wantError(t, "GET", "/v1/jobs/1", "", http.StatusNotFound, "not_found", "1") // nothing was inserted
	if code := s.call(t, "POST", "/v1/jobs", `{"kind":"greet"}`, nil); code != http.StatusCreated {
		t.Fatalf("insert once the lock is gone: %d", code)
	}
}
