package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/builtin"
	"github.com/rotahq/rota/store/sqlite"
)

// startLimitedNode runs the built-in kinds on a node whose results are capped at maxResult bytes,
// with the same cap given to the built-in kinds, as a node's operator sets them.
func startLimitedNode(t *testing.T, cfg builtin.Config, maxResult int) *rota.Client {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "rota.db"), sqlite.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg.MaxResultBytes = maxResult
	ws := rota.NewWorkers()
	builtin.Register(ws, cfg)
	node, err := rota.NewNode(rota.Config{Store: st, Workers: ws, Logger: logger, MaxResultBytes: maxResult})
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// t.Context() is already done when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := node.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return node.Client()
}

// A webhook that answers 2xx has done its work: however large its headers, the job completes
// after that one request, its result trimmed to fit and marked so, instead of failing over the
// result limit and POSTing again.
func TestHTTPLargeHeadersDoNotRepeatTheRequest(t *testing.T) {
	const maxResult = 16 << 10
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		for i := range 200 {
			w.Header().Set(fmt.Sprintf("X-Big-%03d", i), strings.Repeat("v", 1000)) // 200 KB in all
		}
		w.Header().Set("X-Small", "kept")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte("accepted"))
	}))
	defer srv.Close()
	c := startLimitedNode(t, builtin.Config{HTTPAllow: []string{"127.0.0.1"}}, maxResult)
	res, err := c.Insert(t.Context(), builtin.HTTPArgs{URL: srv.URL, Body: "event"}, &rota.InsertOpts{MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	row, err := c.Wait(t.Context(), res.Job.ID)
	if err != nil {
		t.Fatalf("job ended %v: %v", row.State, err)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("the webhook got %d requests", n)
	}
	var out builtin.HTTPResult
	if err := json.Unmarshal(row.Result, &out); err != nil {
		t.Fatal(err)
	}
	if len(row.Result) > maxResult || !out.HeadersTruncated || out.Status != http.StatusAccepted ||
		out.Body != "accepted" || out.Headers["X-Small"] != "kept" {
		t.Fatalf("result of %d bytes: status %d, body %q, headers_truncated %v, %d headers",
			len(row.Result), out.Status, out.Body, out.HeadersTruncated, len(out.Headers))
	}
}

// A request names rota and its job, so a receiver can tell a retry from a new call, and a JSON
// body says it is JSON; what the args set wins.
func TestHTTPIdentifiesItsJob(t *testing.T) {
	got := make(chan http.Header, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
	}))
	defer srv.Close()
	c := startNode(t, builtin.Config{HTTPAllow: []string{"127.0.0.1"}})
	row, err := run(t, c, builtin.HTTPArgs{URL: srv.URL, Body: `{"a":1}`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := <-got
	if ua := h.Get("User-Agent"); !strings.HasPrefix(ua, "rota/") {
		t.Errorf("User-Agent %q", ua)
	}
	if ct := h.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q for a JSON body", ct)
	}
	if id, at := h.Get(builtin.HeaderJobID), h.Get(builtin.HeaderJobAttempt); id != fmt.Sprint(row.ID) || at != "1" {
		t.Errorf("job headers id=%q attempt=%q, want %d and 1", id, at, row.ID)
	}

	if _, err := run(t, c, builtin.HTTPArgs{URL: srv.URL, Body: "plain", Headers: map[string]string{"User-Agent": "mine"}}, nil); err != nil {
		t.Fatal(err)
	}
	h = <-got
	if ua, ct := h.Get("User-Agent"), h.Get("Content-Type"); ua != "mine" || ct == "application/json" {
		t.Errorf("User-Agent %q, Content-Type %q: the args' User-Agent is kept, a plain body is not called JSON", ua, ct)
	}
}
