package dashboard

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

const token = "dash-token"

var quiet = slog.New(slog.DiscardHandler)

// site is a dashboard on a real SQLite store, with a node that runs two kinds: ok jobs complete,
// boom jobs fail with an error.
type site struct {
	url    string
	client *rota.Client
	events <-chan rota.Event
}

type okArgs struct{}

func (okArgs) Kind() string { return "ok" }

type boomArgs struct{}

func (boomArgs) Kind() string { return "boom" }

func newSite(t *testing.T) *site {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "rota.db"), sqlite.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	workers := rota.NewWorkers()
	rota.AddWorker(workers, rota.WorkFunc[okArgs](func(context.Context, *rota.Job[okArgs]) error { return nil }), nil)
	rota.AddWorker(workers, rota.WorkFunc[boomArgs](func(context.Context, *rota.Job[boomArgs]) error {
		return errors.New("disk on fire")
	}), &rota.WorkerOptions{BackoffBase: time.Hour})
	node, err := rota.NewNode(rota.Config{Store: st, Workers: workers, Logger: quiet, ID: "node-1",
		Queues: map[string]rota.QueueConfig{"default": {}, "risky": {}}, Leader: rota.LeaderConfig{Standalone: true},
		// The chart and tables read what nodes added to the store: at once, here (see awaitStats).
		StatsInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	events, unsubscribe := node.Subscribe(100)
	t.Cleanup(unsubscribe)
	d, err := New(Config{Client: node.Client(), Token: token, Logger: quiet, Clock: clockwork.NewRealClock()})
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Stop(context.Background()) })
	ts := httptest.NewServer(d)
	t.Cleanup(ts.Close)
	return &site{url: ts.URL, client: node.Client(), events: events}
}

// await reads the node's events until one of type typ.
func (s *site) await(t *testing.T, typ rota.EventType) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-s.events:
			if ev.Type == typ {
				return
			}
		case <-timeout:
			t.Fatalf("no %s event within 10s", typ)
		}
	}
}

// awaitStats reads the node's events until its counts of every attempt that ended before are
// in the store. A count is taken synchronously with its attempt's event, but the first stats
// pass whose end follows that event may have taken the counts just before it; the second began
// after the first ended, so it has them.
func (s *site) awaitStats(t *testing.T) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for passes := 0; passes < 2; {
		select {
		case ev := <-s.events:
			if ev.Type == rota.EventServiceRun && ev.Service == rota.ServiceStats {
				passes++
			}
		case <-timeout:
			t.Fatalf("%d stats passes ended within 10s, want 2", passes)
		}
	}
}

// browser is an HTTP client with cookies that does not follow redirects, so tests see them.
func browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string) (int, string, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(body)
}

func post(t *testing.T, c *http.Client, u string, form url.Values, origin string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

func TestSignInIsRequired(t *testing.T) {
	s := newSite(t)
	c := browser(t)
	if code, loc, _ := get(t, c, s.url+"/jobs?state=discarded"); code != http.StatusSeeOther || loc != "/login?next=%2Fjobs%3Fstate%3Ddiscarded" {
		t.Fatalf("signed out: %d to %q", code, loc)
	}
	if code, _ := post(t, c, s.url+"/queues/default/pause", nil, ""); code != http.StatusUnauthorized {
		t.Fatalf("pause while signed out: %d", code)
	}
	if code, _ := post(t, c, s.url+"/login", url.Values{"token": {"wrong"}}, ""); code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", code)
	}
	if code, loc := post(t, c, s.url+"/login", url.Values{"token": {token}, "next": {"//evil.example/"}}, ""); code != http.StatusSeeOther || loc != "/" {
		t.Fatalf("sign in with a foreign next: %d to %q", code, loc)
	}
	if code, _, body := get(t, c, s.url+"/"); code != http.StatusOK || !strings.Contains(body, "<h1>Queues</h1>") {
		t.Fatalf("signed in: %d\n%s", code, body)
	}
	// A form posted from another site is refused even with the cookie.
	if code, _ := post(t, c, s.url+"/queues/default/pause", nil, "https://evil.example"); code != http.StatusForbidden {
		t.Fatalf("cross-site pause: %d", code)
	}
	if _, err := New(Config{Client: s.client}); err == nil {
		t.Fatal("New without a token or NoAuth succeeded")
	}
}

func TestPagesShowJobsErrorsAndThroughput(t *testing.T) {
	s := newSite(t)
	c := browser(t)
	post(t, c, s.url+"/login", url.Values{"token": {token}}, "")
	ctx := context.Background()
	if _, err := s.client.Insert(ctx, okArgs{}, nil); err != nil {
		t.Fatal(err)
	}
	s.await(t, rota.EventJobCompleted)
	bad, err := s.client.Insert(ctx, boomArgs{}, &rota.InsertOpts{Queue: "risky"})
	if err != nil {
		t.Fatal(err)
	}
	s.await(t, rota.EventJobFailed)
	s.awaitStats(t)

	_, _, body := get(t, c, s.url+"/")
	for _, want := range []string{`data-queue="default"`, `data-queue="risky"`, `<rect class="completed"`, `<rect class="failed"`, `id="nodes"`,
		`<meta http-equiv="refresh" content="10">`, `<text class="axis y"`, `<text class="axis x"`,
		`<tr data-name="risky"><td><a href="/?queue=risky#chart-title">risky</a></td><td class="num">0</td><td class="num">1</td>`,
		`<tr data-name="ok"><td><a href="/?kind=ok#chart-title">ok</a></td><td class="num">1</td><td class="num">0</td>`,
		`<p class="legend"><span class="completed">completed</span> · <span class="failed">failed</span> · <span class="discarded">discarded</span> · <span class="cancelled">cancelled</span>`,
		`Attempts in the fleet, last hour`} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %s", want)
		}
	}
	// A queue's link narrows the chart and the tables to its attempts, and a kind's link there
	// keeps the queue.
	_, _, body = get(t, c, s.url+"/?queue=risky")
	for _, want := range []string{`Attempts of queue risky, last hour`, `<rect class="failed"`, `id="whole-fleet"`,
		`<a href="/?kind=boom&amp;queue=risky#chart-title">boom</a>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the risky queue's overview lacks %s", want)
		}
	}
	if strings.Contains(body, `<rect class="completed"`) || strings.Contains(body, `data-name="ok"`) {
		t.Errorf("the risky queue's overview counts the default queue's ok job:\n%s", body)
	}
	_, _, body = get(t, c, s.url+"/?kind=ok")
	if !strings.Contains(body, `Attempts of kind ok, last hour`) || !strings.Contains(body, `<rect class="completed"`) ||
		strings.Contains(body, `<rect class="failed"`) {
		t.Errorf("the ok kind's overview:\n%s", body)
	}
	_, _, body = get(t, c, s.url+"/jobs?state=retryable")
	if !strings.Contains(body, "disk on fire") || strings.Contains(body, `<td>ok</td>`) {
		t.Errorf("retryable jobs page:\n%s", body)
	}
	_, _, body = get(t, c, s.url+"/jobs/"+itoa(bad.Job.ID))
	if !strings.Contains(body, `<td class="node">node-1</td>`) || !strings.Contains(body, "disk on fire") || !strings.Contains(body, `id="retry"`) {
		t.Errorf("job page:\n%s", body)
	}
	if code, _, _ := get(t, c, s.url+"/jobs/999"); code != http.StatusNotFound {
		t.Errorf("missing job: %d", code)
	}
	// The id box opens a job; what is not an id is said so.
	if code, loc, _ := get(t, c, s.url+"/jobs/find?id=+%23"+itoa(bad.Job.ID)); code != http.StatusSeeOther || loc != "/jobs/"+itoa(bad.Job.ID) {
		t.Errorf("find by id: %d to %q", code, loc)
	}
	if code, _, body := get(t, c, s.url+"/jobs/find?id=abc"); code != http.StatusBadRequest || !strings.Contains(body, "is not a job id") {
		t.Errorf("find by a non-id: %d\n%s", code, body)
	}
	if code, loc := post(t, c, s.url+"/jobs/"+itoa(bad.Job.ID)+"/cancel", nil, s.url); code != http.StatusSeeOther || loc != "/jobs/"+itoa(bad.Job.ID) {
		t.Fatalf("cancel: %d to %q", code, loc)
	}
	if j, err := s.client.Get(ctx, bad.Job.ID); err != nil || j.State != rota.StateCancelled {
		t.Fatalf("after cancel: %+v, %v", j, err)
	}

	// Work no node runs is named on the overview: a queue the node does not serve.
	if _, err := s.client.Insert(ctx, okArgs{}, &rota.InsertOpts{Queue: "nightly"}); err != nil {
		t.Fatal(err)
	}
	_, _, body = get(t, c, s.url+"/")
	if !strings.Contains(body, `<li data-code="queue_unserved">no live node serves queue nightly, with 1 job waiting</li>`) {
		t.Errorf("overview does not warn of the unserved queue:\n%s", body)
	}
	// A node's running jobs are counted on its row.
	if _, err := s.client.Store().Claim(ctx, store.ClaimParams{Queue: "nightly", Kinds: []string{"ok"}, Max: 1, Owner: "node-1", LeaseFor: time.Minute}); err != nil {
		t.Fatal(err)
	}
	_, _, body = get(t, c, s.url+"/")
	if !strings.Contains(body, `<td class="num running"><a href="/jobs?state=running&amp;owner=node-1">1</a></td>`) {
		t.Errorf("overview does not count node-1's running job:\n%s", body)
	}
	// A node not seen for two of its registration intervals is marked stale: one that said it
	// registers every microsecond is, by the time the page is read.
	if err := s.client.Store().(store.NodeRegistry).RegisterNode(ctx, store.NodeInfo{ID: "node-gone", Host: "h",
		StartedAt: time.Now(), RegisterEvery: time.Microsecond}); err != nil {
		t.Fatal(err)
	}
	_, _, body = get(t, c, s.url+"/")
	if !regexp.MustCompile(`<tr class="stale"><td>node-gone</td>.*<span class="badge">stale</span>`).MatchString(body) ||
		regexp.MustCompile(`<tr class="stale"><td>node-1</td>`).MatchString(body) {
		t.Errorf("overview does not mark node-gone stale, or marks node-1:\n%s", body)
	}
	// The count leads to the node's running jobs.
	_, _, body = get(t, c, s.url+"/jobs?state=running&owner=node-1")
	if !strings.Contains(body, `id="filter-owner" value="node-1"`) || !strings.Contains(body, `<td>ok</td><td>nightly</td>`) {
		t.Errorf("node-1's running jobs:\n%s", body)
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"": "/", "/jobs?state=x": "/jobs?state=x", "//evil": "/", "/\\evil": "/", "https://evil": "/", "jobs": "/",
		"/\t/evil": "/", "/a\\b": "/", "/\n/evil": "/", "/%09/x": "/%09/x",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A queue whose name holds a slash gets a working Pause button: the name is one path segment.
func TestNamesWithSlashes(t *testing.T) {
	s := newSite(t)
	c := browser(t)
	post(t, c, s.url+"/login", url.Values{"token": {token}}, "")
	if _, err := s.client.Insert(context.Background(), okArgs{}, &rota.InsertOpts{Queue: "reports/eu"}); err != nil {
		t.Fatal(err)
	}
	_, _, body := get(t, c, s.url+"/")
	const action = `action="/queues/reports%2feu/pause"`
	if !strings.Contains(strings.ToLower(body), action) {
		t.Fatalf("overview lacks %s:\n%s", action, body)
	}
	if code, _ := post(t, c, s.url+"/queues/reports%2Feu/pause", nil, ""); code != http.StatusSeeOther {
		t.Fatalf("pause: %d", code)
	}
	stats, err := s.client.QueueStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range stats {
		if q.Queue == "reports/eu" && !q.Paused {
			t.Fatal("reports/eu is not paused")
		}
	}
}

// Without authentication the pages still have their navigation, and no sign-out.
func TestNoAuthPages(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "rota.db"), sqlite.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d, err := New(Config{Client: rota.NewClient(st, nil), NoAuth: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(d)
	t.Cleanup(ts.Close)
	code, _, body := get(t, browser(t), ts.URL+"/schedules")
	if code != http.StatusOK || !strings.Contains(body, `href="/jobs"`) || strings.Contains(body, "Sign out") {
		t.Fatalf("no-auth schedules page: %d\n%s", code, body)
	}
}

// A bulk action over the filter's matches first says how many jobs it will touch, then, once
// that count is confirmed, applies to each, and says which it left and why.
func TestBulkActionsConfirmTheCount(t *testing.T) {
	s := newSite(t)
	c := browser(t)
	post(t, c, s.url+"/login", url.Values{"token": {token}}, "")
	ctx := context.Background()
	var ids []int64
	for range 3 {
		res, err := s.client.Insert(ctx, boomArgs{}, &rota.InsertOpts{Queue: "risky"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Job.ID)
		s.await(t, rota.EventJobFailed)
	}
	filter := url.Values{"action": {"cancel-all"}, "state": {"retryable"}, "queue": {"risky"}}
	body := postBody(t, c, s.url+"/jobs/bulk", filter, s.url)
	if !strings.Contains(body, "Cancel 3 jobs: every job with state retryable, queue risky?") || !strings.Contains(body, `name="confirm" value="3"`) {
		t.Fatalf("confirmation page:\n%s", body)
	}
	for _, id := range ids {
		if j, _ := s.client.Get(ctx, id); j.State != rota.StateRetryable {
			t.Fatalf("job %d is %s before the confirmation", id, j.State)
		}
	}
	filter.Set("confirm", "3")
	body = postBody(t, c, s.url+"/jobs/bulk", filter, s.url)
	if !strings.Contains(body, "Cancel: 3 of 3 jobs.") {
		t.Fatalf("result page:\n%s", body)
	}
	for _, id := range ids {
		if j, _ := s.client.Get(ctx, id); j.State != rota.StateCancelled {
			t.Fatalf("job %d is %s after the bulk cancel", id, j.State)
		}
	}
	// Selected ones: delete two, one of which no longer exists.
	sel := url.Values{"action": {"delete"}, "id": {itoa(ids[0]), "999"}, "confirm": {"2"}}
	body = postBody(t, c, s.url+"/jobs/bulk", sel, s.url)
	if !strings.Contains(body, "Delete: 1 of 2 jobs. 1 left as they were:") || !strings.Contains(body, "job 999</a>: not found") {
		t.Fatalf("delete result:\n%s", body)
	}
	if _, err := s.client.Get(ctx, ids[0]); err == nil {
		t.Fatal("the deleted job is still there")
	}
}

// postBody posts form and returns the page it answers with.
func postBody(t *testing.T, c *http.Client, u string, form url.Values, origin string) string {
	t.Helper()
	req, err := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d\n%s", u, resp.StatusCode, b)
	}
	return string(b)
}

// A posted form past the dashboard's bound is refused, whichever page it is posted to: a bulk
// action's 400, and a schedule's removal that reads nothing of it (no confirmation) and removes
// nothing.
func TestPostedFormsAreBounded(t *testing.T) {
	s := newSite(t)
	c := browser(t)
	post(t, c, s.url+"/login", url.Values{"token": {token}}, "")
	if _, err := s.client.UpsertSchedule(context.Background(), rota.Schedule{Name: "nightly", Expr: "@daily", Args: boomArgs{}}); err != nil {
		t.Fatal(err)
	}
	big := url.Values{"action": {"cancel-all"}, "pad": {strings.Repeat("x", 100<<10)}}
	if code, _ := post(t, c, s.url+"/jobs/bulk", big, s.url); code != http.StatusBadRequest {
		t.Errorf("bulk action with a 100 KiB form: %d, want 400", code)
	}
	big = url.Values{"confirm": {"yes"}, "pad": {strings.Repeat("x", 100<<10)}}
	post(t, c, s.url+"/schedules/nightly/remove", big, s.url)
	if _, err := s.client.GetSchedule(context.Background(), "nightly"); err != nil {
		t.Errorf("a schedule removal posted with a 100 KiB form removed it: %v", err)
	}
}
