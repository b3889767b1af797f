package httpapi_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/httpapi"
	"github.com/rotahq/rota/internal/pgtest"
	"github.com/rotahq/rota/store/postgres"
)

// newPostgresServer is newServer on a PostgreSQL store of its own schema.
func newPostgresServer(t *testing.T) *server {
	t.Helper()
	url := pgtest.URL(t)
	st, err := postgres.Open(context.Background(), url, postgres.WithSchema(pgtest.Schema(t, url)),
		postgres.WithAutoMigrate(), postgres.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	client := rota.NewClient(st, &rota.ClientConfig{Logger: quiet})
	h, err := httpapi.New(httpapi.Config{Client: client, Token: token, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &server{url: ts.URL, client: client}
}

// Names and filters no store keeps as text (NUL, bytes that are not UTF-8) are the caller's
// mistake or name nothing: 400 or 404, never a 500 from PostgreSQL refusing the query.
func TestPostgresUnstorableNamesAndFiltersAreNot500(t *testing.T) {
	s := newPostgresServer(t)
	for _, route := range []string{
		"GET /v1/jobs?kind=%00", "GET /v1/jobs?queue=%00", "GET /v1/jobs?tag=%ff", "GET /v1/jobs?workflow=%ff",
		"GET /v1/jobs?owner=%00", "GET /v1/jobs?schedule=%00", "GET /v1/jobs?args_contains=%00",
		"GET /v1/jobs?args_path=a%00&args_value=1", "GET /v1/workflows?before=%00",
		"GET /v1/workflows/%00", "POST /v1/workflows/%ff/cancel", "POST /v1/workflows/%00/retry",
		"GET /v1/schedules/%00", "DELETE /v1/schedules/%ff", "POST /v1/schedules/%00/pause",
	} {
		method, path, _ := strings.Cut(route, " ")
		var e apiError
		if got := s.call(t, method, path, "", &e); got != 400 && got != 404 {
			t.Errorf("%s: %d %+v, want 400 or 404", route, got, e)
		}
	}
}

// Args holding an escaped NUL are refused at the insert: PostgreSQL's jsonb, which an args path
// filter reads them through, cannot hold one, and one such job would fail every such search.
func TestPostgresNULInArgsIsRefusedAndSearchesGoOn(t *testing.T) {
	s := newPostgresServer(t)
	var e apiError
	if got := s.call(t, "POST", "/v1/jobs", `{"kind":"greet","args":{"account":"\u0000"}}`, &e); got != 400 {
		t.Errorf("insert of args holding \\u0000: %d %+v, want 400", got, e)
	}
	if got := s.call(t, "GET", "/v1/jobs?args_path=account&args_value=42", "", &e); got != 200 {
		t.Fatalf("args_path search: %d %+v, want 200", got, e)
	}
}
