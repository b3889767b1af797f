package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/httpapi"
	"github.com/rotahq/rota/internal/leader"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

const token = "s3cret-token"

var quiet = slog.New(slog.DiscardHandler)

// greetArgs is the job kind the test node runs: it greets Name, or fails when Name is empty.
type greetArgs struct {
	Name string `json:"name"`
}

func (greetArgs) Kind() string { return "greet" }

// server is the API on a real SQLite store, served over a real listener.
type server struct {
	url    string
	client *rota.Client
	node   *rota.Node
}

func newServer(t *testing.T) *server {
	t.Helper()
	return newServerWith(t, httpapi.Config{Token: token})
}

// newServerWith is newServer with cfg, whose Client and Logger it fills in.
func newServerWith(t *testing.T, cfg httpapi.Config) *server {
	t.Helper()
	h, client := newHandler(t, cfg)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &server{url: ts.URL, client: client}
}

// newHandler is the API with cfg on a real SQLite store, for tests that call it directly: to
// choose the client's address, or to call it many times fast. It fills in cfg's Client, and its
// Logger unless set.
func newHandler(t testing.TB, cfg httpapi.Config) (http.Handler, *rota.Client) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "rota.db"), sqlite.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	client := rota.NewClient(st, &rota.ClientConfig{Logger: quiet})
	cfg.Client = client
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	h, err := httpapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h, client
}

// startNode runs a node on the server's store that works greet jobs.
func (s *server) startNode(t *testing.T) {
	t.Helper()
	workers := rota.NewWorkers()
	rota.AddWorker(workers, rota.WorkFunc[greetArgs](func(ctx context.Context, j *rota.Job[greetArgs]) error {
		return j.SetResult(map[string]string{"greeting": "hello " + j.Args.Name})
	}), nil)
	node, err := rota.NewNode(rota.Config{Store: s.client.Store(), Workers: workers, Logger: quiet, Leader: rota.LeaderConfig{Standalone: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Stop(context.Background()) })
	s.node = node
}

// call sends a request with the token and decodes the JSON answer into out (unless nil).
func (s *server) call(t *testing.T, method, path, body string, out any) int {
	t.Helper()
	return s.callAs(t, "Bearer "+token, method, path, body, out)
}

func (s *server) callAs(t *testing.T, auth, method, path, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s %s: Content-Type %q, body %s", method, path, ct, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
	return resp.StatusCode
}

type apiError struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

type inserted struct {
	Job       rota.JobRow `json:"job"`
	Duplicate bool        `json:"duplicate"`
}

// wantError checks a request fails with status and code, and its message mentions what.
func (s *server) wantError(t *testing.T, method, path, body string, status int, code, what string) {
	t.Helper()
	var e apiError
	if got := s.call(t, method, path, body, &e); got != status || e.Code != code || !strings.Contains(e.Error, what) {
		t.Errorf("%s %s %.60s: %d %+v; want %d %s mentioning %q", method, path, body, got, e, status, code, what)
	}
}

func (s *server) countJobs(t *testing.T) int {
	t.Helper()
	jobs, err := s.client.List(context.Background(), rota.ListParams{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(jobs)
}

func TestEveryRouteButHealthNeedsTheToken(t *testing.T) {
	// The wrong tries below are a minute apart, so that the limit on them (see
	// TestWrongTokensAreLimitedPerClient) never answers instead of the check.
	clock := clockwork.NewFakeClock()
	s := newServerWith(t, httpapi.Config{Token: token, Clock: clock})
	for _, auth := range []string{"", "Bearer wrong", "Bearer " + token + "x", "Basic " + token, token, "Bearer"} {
		var e apiError
		if got := s.callAs(t, auth, "GET", "/v1/queues", "", &e); got != http.StatusUnauthorized || e.Code != "unauthorized" {
			t.Errorf("Authorization %q: %d %+v, want 401", auth, got, e)
		}
		clock.Advance(time.Minute)
	}
	if got := s.callAs(t, "", "POST", "/v1/jobs", `{"kind":"greet"}`, nil); got != http.StatusUnauthorized {
		t.Errorf("enqueue without a token: %d", got)
	}
	clock.Advance(time.Minute)
	if n := s.countJobs(t); n != 0 {
		t.Fatalf("%d jobs inserted without a token", n)
	}
	if got := s.callAs(t, "", "GET", "/healthz", "", nil); got != http.StatusOK {
		t.Errorf("healthz: %d", got)
	}
	if got := s.call(t, "GET", "/v1/queues", "", nil); got != http.StatusOK {
		t.Errorf("with the token: %d", got)
	}
	if got := s.callAs(t, "bearer "+token, "GET", "/v1/queues", "", nil); got != http.StatusOK {
		t.Errorf("with the scheme in lower case: %d", got)
	}
	// Every route is behind the token, unknown ones included.
	for _, route := range [][2]string{
		{"POST", "/v1/jobs/batch"}, {"GET", "/v1/jobs"}, {"GET", "/v1/jobs/1"}, {"POST", "/v1/jobs/1/cancel"},
		{"POST", "/v1/jobs/1/retry"}, {"DELETE", "/v1/jobs/1"}, {"GET", "/v1/jobs/1/wait"}, {"POST", "/v1/queues/q/pause"},
		{"POST", "/v1/queues/q/resume"}, {"GET", "/v1/schedules"}, {"GET", "/v1/schedules/s"},
		{"PUT", "/v1/schedules/s"}, {"DELETE", "/v1/schedules/s"}, {"POST", "/v1/schedules/s/pause"},
		{"POST", "/v1/schedules/s/resume"}, {"GET", "/v1/status"}, {"GET", "/v1/stats"}, {"POST", "/v1/workflows"}, {"GET", "/v1/workflows"},
		{"GET", "/v1/workflows/w"}, {"POST", "/v1/workflows/w/cancel"}, {"POST", "/v1/workflows/w/retry"},
		{"POST", "/v1/batches"}, {"POST", "/v1/batches/1/jobs"}, {"GET", "/v1/no-such-route"}, {"GET", "/elsewhere"},
	} {
		if got := s.callAs(t, "", route[0], route[1], "", nil); got != http.StatusUnauthorized {
			t.Errorf("%s %s without a token: %d", route[0], route[1], got)
		}
		clock.Advance(time.Minute)
	}
	if _, err := httpapi.New(httpapi.Config{Client: s.client}); err == nil {
		t.Error("New without a token or NoAuth succeeded")
	}
}

func TestEnqueueGetAndList(t *testing.T) {
	s := newServer(t)
	var first inserted
	if got := s.call(t, "POST", "/v1/jobs", `{"kind":"greet","args":{"name":"ada"},"queue":"mail","priority":3,
		"delay":"1h","tags":["a"],"metadata":{"by":"test"},"unique_key":"ada"}`, &first); got != http.StatusCreated {
		t.Fatalf("enqueue: %d", got)
	}
	j := first.Job
	if j.Kind != "greet" || j.Queue != "mail" || j.Priority != 3 || j.State != rota.StateScheduled ||
		string(j.Args) != `{"name":"ada"}` || len(j.Tags) != 1 || string(j.Metadata) != `{"by":"test"}` || first.Duplicate {
		t.Fatalf("enqueued %+v", first)
	}
	if d := time.Until(j.RunAt); d < 59*time.Minute || d > time.Hour {
		t.Errorf("run_at %v is not an hour away", j.RunAt)
	}
	var dup inserted
	if got := s.call(t, "POST", "/v1/jobs", `{"kind":"greet","queue":"mail","unique_key":"ada"}`, &dup); got != http.StatusOK || !dup.Duplicate || dup.Job.ID != j.ID {
		t.Fatalf("second insert of the key: %d %+v", got, dup)
	}
	var got rota.JobRow
	if code := s.call(t, "GET", "/v1/jobs/"+itoa(j.ID), "", &got); code != http.StatusOK || got.ID != j.ID || got.State != rota.StateScheduled {
		t.Fatalf("get: %d %+v", code, got)
	}
	s.call(t, "POST", "/v1/jobs", `{"kind":"greet"}`, nil)
	var page struct {
		Jobs      []rota.JobRow `json:"jobs"`
		NextAfter int64         `json:"next_after"`
	}
	if code := s.call(t, "GET", "/v1/jobs?state=scheduled&queue=mail", "", &page); code != http.StatusOK || len(page.Jobs) != 1 || page.Jobs[0].ID != j.ID {
		t.Fatalf("list scheduled in mail: %d %+v", code, page)
	}
	// Newest first by default, as the dashboard and the CLI list: j is the older of the two.
	s.call(t, "GET", "/v1/jobs?limit=1", "", &page)
	if len(page.Jobs) != 1 || page.NextAfter != page.Jobs[0].ID || page.Jobs[0].ID <= j.ID {
		t.Fatalf("first page of one, newest first: %+v", page)
	}
	s.call(t, "GET", "/v1/jobs?limit=1&after="+itoa(page.NextAfter), "", &page)
	if len(page.Jobs) != 1 || page.Jobs[0].ID != j.ID {
		t.Fatalf("second page: %+v", page)
	}
	s.call(t, "GET", "/v1/jobs?limit=1&order=asc", "", &page)
	if len(page.Jobs) != 1 || page.Jobs[0].ID != j.ID {
		t.Fatalf("first page, oldest first: %+v", page)
	}
}

// Bad input gets a clear error and inserts nothing.
func TestBadInputIsRefusedWithTheReason(t *testing.T) {
	s := newServer(t)
	s.wantError(t, "POST", "/v1/jobs", `{"kind":"greet","priorty":3}`, 400, "invalid", `unknown field "priorty"`)
	s.wantError(t, "POST", "/v1/jobs", `{"kind":"greet"`, 400, "invalid", "request body")
	s.wantError(t, "POST", "/v1/jobs", ``, 400, "invalid", "JSON body")
	s.wantError(t, "POST", "/v1/jobs", `{"kind":"greet"} {}`, 400, "invalid", "after the JSON value")
	s.wantError(t, "POST", "/v1/jobs", `{"args":{}}`, 400, "invalid", `"kind" is required`)
	s.wantError(t, "POST", "/v1/jobs", `{"kind":"no spaces allowed"}`, 400, "invalid", "kind")
	s.wantError(t, "POST", "/v1/jobs", `{"kind":"greet","args":{"x":"`+strings.Repeat("a", 1536<<10)+`"}}`, 400, "invalid", "limit")
	s.wantError(t, "POST", "/v1/jobs", `{"kind":"greet","delay":"soon"}`, 400, "invalid", `"delay"`)
	s.wantError(t, "POST", "/v1/jobs", `{"kind":"greet","delay":"1m","run_at":"2030-01-01T00:00:00Z"}`, 400, "invalid", "not both")
	s.wantError(t, "POST", "/v1/jobs", `{"kind":"greet","args":{"x":"`+strings.Repeat("a", httpapi.BodyMaxDefault)+`"}}`, 413, "too_large", "limit")
	s.wantError(t, "POST", "/v1/jobs/batch", `{"jobs":[{"kind":"greet"},{"queue":"x"}]}`, 400, "invalid", "job 2 of 2")
	s.wantError(t, "POST", "/v1/jobs/batch", `{"jobs":[]}`, 400, "invalid", "1 to")
	s.wantError(t, "GET", "/v1/jobs/abc", "", 400, "invalid", `"abc"`)
	s.wantError(t, "GET", "/v1/jobs?limit=0", "", 400, "invalid", "limit")
	s.wantError(t, "GET", "/v1/jobs?state=bogus", "", 400, "invalid", "bogus")
	s.wantError(t, "GET", "/v1/jobs/99", "", 404, "not_found", "99")
	s.wantError(t, "POST", "/v1/jobs/99/cancel", "", 404, "not_found", "99")
	s.wantError(t, "GET", "/v1/nothing-here", "", 404, "not_found", "no such route")
	s.wantError(t, "PUT", "/v1/schedules/nightly", `{"expr":"61 * * * *","kind":"greet"}`, 400, "invalid", "61")
	s.wantError(t, "GET", "/v1/schedules/none", "", 404, "not_found", "none")
	s.wantError(t, "POST", "/v1/queues/bad%20name/pause", "", 400, "invalid", "bad name")
	if n := s.countJobs(t); n != 0 {
		t.Fatalf("%d jobs inserted by refused requests", n)
	}
}

func TestBatchIsAllOrNothing(t *testing.T) {
	s := newServer(t)
	var res struct {
		Jobs []inserted `json:"jobs"`
	}
	if code := s.call(t, "POST", "/v1/jobs/batch", `{"jobs":[{"kind":"greet"},{"kind":"greet","queue":"q2"},{"kind":"greet","unique_key":"k"}]}`, &res); code != http.StatusCreated || len(res.Jobs) != 3 {
		t.Fatalf("batch: %d %+v", code, res)
	}
	if res.Jobs[1].Job.Queue != "q2" || res.Jobs[2].Job.UniqueKey != "k" {
		t.Fatalf("batch results %+v", res.Jobs)
	}
	if n := s.countJobs(t); n != 3 {
		t.Fatalf("%d jobs, want 3", n)
	}
}

func TestWaitReturnsTheResult(t *testing.T) {
	s := newServer(t)
	s.startNode(t)
	var in inserted
	s.call(t, "POST", "/v1/jobs", `{"kind":"greet","args":{"name":"ada"}}`, &in)
	var res struct {
		Job  rota.JobRow `json:"job"`
		Done bool        `json:"done"`
	}
	if code := s.call(t, "GET", "/v1/jobs/"+itoa(in.Job.ID)+"/wait?timeout=10s", "", &res); code != http.StatusOK || !res.Done ||
		res.Job.State != rota.StateCompleted || string(res.Job.Result) != `{"greeting":"hello ada"}` {
		t.Fatalf("wait: %d %+v", code, res)
	}
	// A job that cannot finish within the timeout: the answer says so, and is not an error.
	s.call(t, "POST", "/v1/jobs", `{"kind":"greet","delay":"1h"}`, &in)
	if code := s.call(t, "GET", "/v1/jobs/"+itoa(in.Job.ID)+"/wait?timeout=20ms", "", &res); code != http.StatusOK || res.Done || res.Job.State != rota.StateScheduled {
		t.Fatalf("wait for a job an hour away: %d %+v", code, res)
	}
	s.wantError(t, "GET", "/v1/jobs/"+itoa(in.Job.ID)+"/wait?timeout=-1s", "", 400, "invalid", "timeout")
}

func TestCancelAndRetry(t *testing.T) {
	s := newServer(t)
	var in inserted
	s.call(t, "POST", "/v1/jobs", `{"kind":"greet","delay":"1h"}`, &in)
	var j rota.JobRow
	if code := s.call(t, "POST", "/v1/jobs/"+itoa(in.Job.ID)+"/cancel", "", &j); code != http.StatusOK || j.State != rota.StateCancelled {
		t.Fatalf("cancel: %d %+v", code, j)
	}
	if code := s.call(t, "POST", "/v1/jobs/"+itoa(in.Job.ID)+"/retry", "", &j); code != http.StatusOK || j.State != rota.StateAvailable {
		t.Fatalf("retry: %d %+v", code, j)
	}
}

func TestDelete(t *testing.T) {
	s := newServer(t)
	var in inserted
	s.call(t, "POST", "/v1/jobs", `{"kind":"greet","args":{"name":"ada"}}`, &in)
	path := "/v1/jobs/" + itoa(in.Job.ID)
	var gone struct {
		ID      int64 `json:"id"`
		Deleted bool  `json:"deleted"`
	}
	if code := s.call(t, "DELETE", path, "", &gone); code != http.StatusOK || gone.ID != in.Job.ID || !gone.Deleted {
		t.Fatalf("delete: %d %+v", code, gone)
	}
	s.wantError(t, "GET", path, "", 404, "not_found", "not found")
	s.wantError(t, "DELETE", path, "", 404, "not_found", "not found")
	// A running job is refused: it is cancelled first.
	s.call(t, "POST", "/v1/jobs", `{"kind":"greet","queue":"held"}`, &in)
	if _, err := s.client.Store().Claim(context.Background(), store.ClaimParams{Queue: "held", Kinds: []string{"greet"}, Max: 1, Owner: "n", LeaseFor: time.Minute}); err != nil {
		t.Fatal(err)
	}
	s.wantError(t, "DELETE", "/v1/jobs/"+itoa(in.Job.ID), "", 409, "job_running", "running")
}

func TestQueuesAndBusyInserts(t *testing.T) {
	s := newServer(t)
	s.call(t, "POST", "/v1/jobs", `{"kind":"greet","queue":"thumbs","drop_if_busy":1}`, nil)
	s.wantError(t, "POST", "/v1/jobs", `{"kind":"greet","queue":"thumbs","drop_if_busy":1}`, 429, "busy", "thumbs")
	if code := s.call(t, "POST", "/v1/queues/thumbs/pause", "", nil); code != http.StatusOK {
		t.Fatalf("pause: %d", code)
	}
	var qs struct {
		Queues []struct {
			Queue  string           `json:"queue"`
			Paused bool             `json:"paused"`
			Counts map[string]int64 `json:"counts"`
		} `json:"queues"`
	}
	s.call(t, "GET", "/v1/queues", "", &qs)
	if len(qs.Queues) != 1 || qs.Queues[0].Queue != "thumbs" || !qs.Queues[0].Paused || qs.Queues[0].Counts["available"] != 1 {
		t.Fatalf("queues after pause: %+v", qs)
	}
	s.call(t, "POST", "/v1/queues/thumbs/resume", "", nil)
	s.call(t, "GET", "/v1/queues", "", &qs)
	if qs.Queues[0].Paused {
		t.Fatalf("queue still paused after resume: %+v", qs)
	}
}

func TestSchedules(t *testing.T) {
	s := newServer(t)
	var row struct {
		Name   string      `json:"name"`
		Expr   string      `json:"expr"`
		Zone   string      `json:"zone"`
		Paused bool        `json:"paused"`
		Next   []time.Time `json:"next"`
	}
	body := `{"expr":"0 3 * * *","zone":"Europe/Paris","kind":"greet","args":{"name":"night"},"missed":"skip"}`
	if code := s.call(t, "PUT", "/v1/schedules/nightly", body, &row); code != http.StatusOK || row.Name != "nightly" || row.Zone != "Europe/Paris" || len(row.Next) == 0 {
		t.Fatalf("put: %d %+v", code, row)
	}
	if code := s.call(t, "POST", "/v1/schedules/nightly/pause", "", &row); code != http.StatusOK || !row.Paused {
		t.Fatalf("pause: %d %+v", code, row)
	}
	var list struct {
		Schedules []json.RawMessage `json:"schedules"`
	}
	if s.call(t, "GET", "/v1/schedules", "", &list); len(list.Schedules) != 1 {
		t.Fatalf("list: %+v", list)
	}
	if code := s.call(t, "DELETE", "/v1/schedules/nightly", "", nil); code != http.StatusOK {
		t.Fatalf("delete: %d", code)
	}
	s.wantError(t, "GET", "/v1/schedules/nightly", "", 404, "not_found", "nightly")
}

func TestStatusShowsNodesAndLeader(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	st := s.client.Store()
	if err := st.(store.NodeRegistry).RegisterNode(ctx, store.NodeInfo{ID: "node-a", Host: "h", PID: 7, Version: "v", StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.(store.Leaser).AcquireLease(ctx, leader.NameDefault, "node-a", time.Minute); err != nil {
		t.Fatal(err)
	}
	var got rota.Status
	if code := s.call(t, "GET", "/v1/status", "", &got); code != http.StatusOK || len(got.Nodes) != 1 || got.Nodes[0].ID != "node-a" ||
		got.Leader == nil || !got.Leader.Held || got.Leader.Owner != "node-a" {
		t.Fatalf("status: %d %+v", code, got)
	}
}

// Args read back as they were sent: no HTML escapes of <, > and &.
func TestArgsReadBackAsSent(t *testing.T) {
	s := newServer(t)
	var in inserted
	if code := s.call(t, "POST", "/v1/jobs", `{"kind":"greet","args":{"q":"a>b&c<d"}}`, &in); code != http.StatusCreated && code != http.StatusOK {
		t.Fatalf("enqueue: %d", code)
	}
	req, _ := http.NewRequest("GET", s.url+"/v1/jobs/"+itoa(in.Job.ID), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `{"q":"a>b&c<d"}`) {
		t.Fatalf("the job reads back as %s", body)
	}
}

// GET /v1/stats sums every node's counts in the store: here two nodes' rows of this minute.
func TestStatsSumTheFleet(t *testing.T) {
	s := newServer(t)
	keeper := s.client.Store().(store.StatsKeeper)
	now := time.Now().UTC()
	if err := keeper.AddStats(context.Background(), []store.Stats{
		{Node: "a", Minute: now, Queue: "mail", Kind: "welcome", Completed: 3, Latency: []int64{3}},
		{Node: "b", Minute: now, Queue: "mail", Kind: "welcome", Completed: 4, Failed: 1, Latency: []int64{5}},
	}); err != nil {
		t.Fatal(err)
	}
	var got rota.FleetStats
	if code := s.call(t, "GET", "/v1/stats?window=15m", "", &got); code != http.StatusOK {
		t.Fatalf("stats: %d", code)
	}
	var completed, failed int64
	for _, m := range got.Minutes { // the minute may have turned since the rows were added
		completed, failed = completed+m.Completed, failed+m.Failed
	}
	if len(got.Minutes) != 15 || completed != 7 || failed != 1 {
		t.Fatalf("minutes: %+v", got.Minutes)
	}
	if len(got.Kinds) != 1 || got.Kinds[0].Name != "welcome" || got.Kinds[0].Latency.Count != 8 {
		t.Fatalf("kinds: %+v", got.Kinds)
	}
	// ?queue= and ?kind= count one part of the fleet.
	if err := keeper.AddStats(context.Background(), []store.Stats{
		{Node: "a", Minute: now, Queue: "reports", Kind: "monthly", Completed: 2, Latency: []int64{2}},
	}); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]int64{"queue=reports": 2, "queue=mail": 7, "kind=monthly": 2, "queue=mail&kind=monthly": 0, "": 9} {
		var part rota.FleetStats
		if code := s.call(t, "GET", "/v1/stats?window=15m&"+q, "", &part); code != http.StatusOK {
			t.Fatalf("stats?%s: %d", q, code)
		}
		var completed int64
		for _, m := range part.Minutes {
			completed += m.Completed
		}
		if completed != want {
			t.Errorf("stats?%s: %d completed, want %d", q, completed, want)
		}
	}
	s.wantError(t, "GET", "/v1/stats?window=90s", "", 400, "invalid", "whole minutes")
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }

// A page of another site cannot make a browser enqueue a job, even with no token required.
func TestCrossSiteBrowserRequestsAreRefused(t *testing.T) {
	s := newServerWith(t, httpapi.Config{NoAuth: true})
	for _, hdr := range []map[string]string{{"Sec-Fetch-Site": "cross-site"}, {"Origin": "https://evil.example"}} {
		req, _ := http.NewRequest("POST", s.url+"/v1/jobs", strings.NewReader(`{"kind":"exec","args":{"program":"true"}}`))
		req.Header.Set("Content-Type", "text/plain")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST with %v: %d, want 403", hdr, resp.StatusCode)
		}
	}
	// A program (no browser headers) is served.
	resp, err := http.Post(s.url+"/v1/jobs", "application/json", strings.NewReader(`{"kind":"exec","args":{"program":"true"}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST from a program: %d", resp.StatusCode)
	}
	if jobs, _ := s.client.List(context.Background(), rota.ListParams{}); len(jobs) != 1 {
		t.Fatalf("%d jobs, want only the program's", len(jobs))
	}
}

// The API's description is served as it is checked in, without a token: it holds nothing of the
// server's.
func TestOpenAPIIsServedWithoutAToken(t *testing.T) {
	s := newServer(t)
	resp, err := http.Get(s.url + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != string(httpapi.OpenAPI) || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /v1/openapi.json without a token: %d %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
}
