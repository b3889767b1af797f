package dashboard

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store"
)

// seedSchedule stores schedule "nightly" (ok jobs at 03:00 in Berlin) and plans two of its
// occurrences the way the planner does: one that runs now and completes, one an hour ahead. It
// returns their ids.
func seedSchedule(t *testing.T, s *site) (done, ahead int64) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.client.UpsertSchedule(ctx, rota.Schedule{Name: "nightly", Expr: "0 3 * * *", Zone: "Europe/Berlin",
		Args: okArgs{}, Opts: &rota.InsertOpts{Tags: []string{"cron"}}, Missed: rota.MissedSkip}); err != nil {
		t.Fatal(err)
	}
	occ := func(at time.Time) store.InsertParams {
		return store.InsertParams{Kind: "ok", Queue: "default", Args: []byte(`{}`), MaxAttempts: 3, Schedule: "nightly", RunAt: at}
	}
	now := time.Now()
	// The node's planner may plan the new schedule too: compare with what it left.
	for planned := false; !planned; {
		sc, err := s.client.GetSchedule(ctx, "nightly")
		if err != nil {
			t.Fatal(err)
		}
		to := sc.LastPlanned
		if to.IsZero() {
			to = now
		}
		if planned, err = s.client.Store().PlanSchedule(ctx, "nightly", sc.LastPlanned, to,
			[]store.InsertParams{occ(time.Time{}), occ(now.Add(time.Hour))}); err != nil {
			t.Fatal(err)
		}
	}
	s.await(t, rota.EventJobCompleted)
	jobs, err := s.client.List(ctx, rota.ListParams{Schedule: "nightly"})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("occurrences: %v, %v", jobs, err)
	}
	return jobs[0].ID, jobs[1].ID
}

// A schedule's page shows its timing, next runs and occurrences, and its buttons pause, run,
// edit and (once confirmed) remove it.
func TestSchedulePage(t *testing.T) {
	s := newSite(t)
	c := browser(t)
	post(t, c, s.url+"/login", url.Values{"token": {token}}, "")
	done, ahead := seedSchedule(t, s)
	ctx := context.Background()

	if _, _, body := get(t, c, s.url+"/schedules"); !strings.Contains(body, `<a href="/schedules/nightly">nightly</a>`) {
		t.Fatalf("the schedules page does not link the schedule:\n%s", body)
	}
	code, _, body := get(t, c, s.url+"/schedules/nightly")
	if code != http.StatusOK {
		t.Fatalf("schedule page: %d\n%s", code, body)
	}
	for _, want := range []string{`<code id="schedule-expr">0 3 * * *</code>`, "Europe/Berlin", " 03:00 CE",
		`<tr data-id="` + itoa(ahead) + `">`, `<span class="state scheduled">`, `<span class="state completed">`,
		`href="/jobs/` + itoa(done) + `"`, `id="pause"`} {
		if !strings.Contains(body, want) {
			t.Errorf("schedule page lacks %q", want)
		}
	}
	if strings.Index(body, `data-id="`+itoa(ahead)+`"`) > strings.Index(body, `data-id="`+itoa(done)+`"`) {
		t.Error("occurrences are not newest first")
	}
	if code, _, _ := get(t, c, s.url+"/schedules/nope"); code != http.StatusNotFound {
		t.Errorf("an unknown schedule's page: %d", code)
	}

	// Pausing from the page comes back to it.
	if code, loc := post(t, c, s.url+"/schedules/nightly/pause", url.Values{"from": {"schedule"}}, s.url); code != http.StatusSeeOther || loc != "/schedules/nightly" {
		t.Fatalf("pause: %d to %q", code, loc)
	}
	if _, _, body := get(t, c, s.url+"/schedules/nightly"); !strings.Contains(body, "none while paused") || !strings.Contains(body, `id="resume"`) {
		t.Fatalf("paused schedule's page:\n%s", body)
	}

	// Run now inserts a plain job of the schedule's kind, args and options, and opens it.
	code, loc := post(t, c, s.url+"/schedules/nightly/run", nil, s.url)
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/jobs/") {
		t.Fatalf("run now: %d to %q", code, loc)
	}
	jobs, err := s.client.List(ctx, rota.ListParams{Desc: true, Limit: 1})
	if err != nil || len(jobs) != 1 || "/jobs/"+itoa(jobs[0].ID) != loc {
		t.Fatalf("after run now: %+v, %v", jobs, err)
	}
	if j := jobs[0]; j.Kind != "ok" || j.Schedule != "" || len(j.Tags) != 1 || j.Tags[0] != "cron" {
		t.Fatalf("the job run now: %+v", j)
	}

	// A refused expression shows the library's reason and keeps what was typed.
	code, body = postPage(t, c, s.url+"/schedules/nightly/edit", url.Values{"expr": {"61 * * * *"}, "zone": {"UTC"}}, s.url)
	if code != http.StatusBadRequest || !strings.Contains(body, `id="edit-error"`) || !strings.Contains(body, "61") ||
		!strings.Contains(body, `value="61 * * * *"`) {
		t.Fatalf("bad expression: %d\n%s", code, body)
	}
	if code, loc := post(t, c, s.url+"/schedules/nightly/edit", url.Values{"expr": {"30 4 * * *"}, "zone": {"UTC"}}, s.url); code != http.StatusSeeOther || loc != "/schedules/nightly" {
		t.Fatalf("edit: %d to %q", code, loc)
	}
	sc, err := s.client.GetSchedule(ctx, "nightly")
	if err != nil || sc.Expr != "30 4 * * *" || sc.Zone != "UTC" || !sc.Paused || sc.Kind != "ok" || len(sc.Tags) != 1 {
		t.Fatalf("after the edit: %+v, %v", sc, err)
	}

	// Remove asks first.
	body = postBody(t, c, s.url+"/schedules/nightly/remove", nil, s.url)
	if !strings.Contains(body, `id="remove-question"`) {
		t.Fatalf("remove without confirmation:\n%s", body)
	}
	if _, err := s.client.GetSchedule(ctx, "nightly"); err != nil {
		t.Fatalf("the schedule went before the confirmation: %v", err)
	}
	if code, loc := post(t, c, s.url+"/schedules/nightly/remove", url.Values{"confirm": {"1"}}, s.url); code != http.StatusSeeOther || loc != "/schedules" {
		t.Fatalf("confirmed remove: %d to %q", code, loc)
	}
	if _, err := s.client.GetSchedule(ctx, "nightly"); err == nil {
		t.Fatal("the schedule is still there")
	}
	// Every action is a POST from this site.
	if code, _ := post(t, c, s.url+"/schedules/x/run", nil, "https://evil.example"); code != http.StatusForbidden {
		t.Fatalf("cross-site run now: %d", code)
	}
}

// The jobs page filters by tag, workflow, schedule, args and creation time, and its bulk actions act on that filter.
func TestJobsPageFilters(t *testing.T) {
	s := newSite(t)
	c := browser(t)
	post(t, c, s.url+"/login", url.Values{"token": {token}}, "")
	ctx := context.Background()
	park := func(args string, tags ...string) int64 {
		res, err := s.client.Insert(ctx, rota.RawArgs{KindName: "ok", JSON: []byte(args)},
			&rota.InsertOpts{Queue: "parked", Tags: tags})
		if err != nil {
			t.Fatal(err)
		}
		return res.Job.ID
	}
	a, b := park(`{"customer":"acme"}`, "vip"), park(`{"customer":"other"}`)
	shows := func(q string, want, not int64) {
		t.Helper()
		code, _, body := get(t, c, s.url+"/jobs?"+q)
		if code != http.StatusOK || !strings.Contains(body, `data-id="`+itoa(want)+`"`) || strings.Contains(body, `data-id="`+itoa(not)+`"`) {
			t.Fatalf("/jobs?%s: %d, want job %d and not %d\n%s", q, code, want, not, body)
		}
	}
	shows("tag=vip", a, b)
	shows("args=other", b, a)
	shows("args_path=customer&args_value="+url.QueryEscape(`"acme"`), a, b)
	if code, _, _ := get(t, c, s.url+"/jobs?args_path=customer&args_value=acme"); code != http.StatusBadRequest {
		t.Fatalf("an args value that is not JSON: %d", code)
	}
	wf := rota.NewWorkflow()
	wf.Add("only", rota.RawArgs{KindName: "ok", JSON: []byte(`{}`)}, &rota.InsertOpts{Queue: "parked"})
	ins, err := s.client.InsertWorkflow(ctx, wf)
	if err != nil {
		t.Fatal(err)
	}
	shows("workflow="+url.QueryEscape(ins.ID), ins.Steps["only"].ID, a)
	done, _ := seedSchedule(t, s)
	shows("schedule=nightly", done, a)
	hour := time.Now().UTC().Add(-time.Hour).Format("2006-01-02T15:04")
	shows("args=acme&created_after="+url.QueryEscape(hour), a, b)
	if code, _, body := get(t, c, s.url+"/jobs?created_before="+url.QueryEscape(hour)); code != http.StatusOK || strings.Contains(body, "data-id=") {
		t.Fatalf("created before an hour ago: %d\n%s", code, body)
	}
	if code, _, _ := get(t, c, s.url+"/jobs?created_after=soon"); code != http.StatusBadRequest {
		t.Fatalf("a bad time: %d", code)
	}
	_, _, body := get(t, c, s.url+"/jobs?tag=vip")
	if !strings.Contains(body, `<input type="hidden" name="tag" value="vip">`) {
		t.Fatalf("the bulk form does not carry the filter:\n%s", body)
	}
	body = postBody(t, c, s.url+"/jobs/bulk", url.Values{"action": {"cancel-all"}, "tag": {"vip"}}, s.url)
	if !strings.Contains(body, "Cancel 1 job: every job with tag vip?") {
		t.Fatalf("bulk over a tag:\n%s", body)
	}
}

// postPage posts form and returns the status and page it answers with.
func postPage(t *testing.T, c *http.Client, u string, form url.Values, origin string) (int, string) {
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
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	return resp.StatusCode, b.String()
}

// The jobs page is newest first and pages both ways: older from a full page, newer back from
// an older one, until the first page again.
func TestJobsPagePagesBothWays(t *testing.T) {
	s := newSite(t)
	c := browser(t)
	post(t, c, s.url+"/login", url.Values{"token": {token}}, "")
	var ids []int64
	for range 2*pageSize + 10 {
		res, err := s.client.Insert(context.Background(), rota.RawArgs{KindName: "ok", JSON: []byte(`{}`)},
			&rota.InsertOpts{Queue: "parked"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Job.ID)
	}
	slices.Reverse(ids) // newest first
	row := regexp.MustCompile(`data-id="(\d+)"`)
	link := func(body, id string) string {
		m := regexp.MustCompile(`href="([^"]+)" id="` + id + `"`).FindStringSubmatch(body)
		if m == nil {
			return ""
		}
		return strings.ReplaceAll(m[1], "&amp;", "&")
	}
	open := func(u string, want []int64) string {
		t.Helper()
		code, _, body := get(t, c, s.url+u)
		var got []int64
		for _, m := range row.FindAllStringSubmatch(body, -1) {
			id, _ := strconv.ParseInt(m[1], 10, 64)
			got = append(got, id)
		}
		if code != http.StatusOK || !slices.Equal(got, want) {
			t.Fatalf("%s: %d, jobs %v; want %v", u, code, got, want)
		}
		return body
	}
	first := open("/jobs?queue=parked", ids[:pageSize])
	if link(first, "newer") != "" {
		t.Fatal("the first page links to newer jobs")
	}
	second := open(link(first, "next"), ids[pageSize:2*pageSize])
	third := open(link(second, "next"), ids[2*pageSize:])
	if link(third, "next") != "" {
		t.Fatal("the last page links to older jobs")
	}
	back := open(link(third, "newer"), ids[pageSize:2*pageSize])
	if !strings.Contains(link(back, "newer"), "queue=parked") {
		t.Fatalf("paging loses the filter: %q", link(back, "newer"))
	}
	top := open(link(back, "newer"), ids[:pageSize])
	if link(top, "newer") != "" {
		t.Fatal("the first page, paged back to, links to newer jobs")
	}
	if code, _, _ := get(t, c, s.url+"/jobs?before=1&after=2"); code != http.StatusBadRequest {
		t.Fatalf("before and after together: %d", code)
	}
}
