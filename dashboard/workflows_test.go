package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rotahq/rota"
)

// The workflows list pages by id, newest first; a workflow's page and its steps' pages link to
// each other; cancel and retry are forms of this site only.
func TestWorkflowPages(t *testing.T) {
	s := newSite(t)
	c := browser(t)
	post(t, c, s.url+"/login", url.Values{"token": {token}}, "")
	ctx := context.Background()
	parked := &rota.InsertOpts{Queue: "parked"} // no node serves it: the steps stay as inserted
	var made []string
	var last *rota.WorkflowResult
	for range pageSize + 1 {
		wf := rota.NewWorkflow()
		wf.Add("first", okArgs{}, parked)
		wf.Add("second", okArgs{}, parked).After("first")
		res, err := s.client.InsertWorkflow(ctx, wf)
		if err != nil {
			t.Fatal(err)
		}
		made, last = append(made, res.ID), res
	}

	rowID := regexp.MustCompile(`<tr data-id="([^"]+)">`)
	ids := func(body string) []string {
		var out []string
		for _, m := range rowID.FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		return out
	}
	_, _, body := get(t, c, s.url+"/workflows")
	page1 := ids(body)
	if len(page1) != pageSize || !slices.IsSortedFunc(page1, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Fatalf("first page: %d workflows, newest first? %v", len(page1), page1)
	}
	next := regexp.MustCompile(`href="(/workflows\?before=[^"]+)" id="next"`).FindStringSubmatch(body)
	if next == nil || !strings.Contains(body, `aria-current="page">Workflows</a>`) {
		t.Fatalf("first page has no link to older workflows, or the navigation does not mark it:\n%s", body)
	}
	_, _, body = get(t, c, s.url+strings.ReplaceAll(next[1], "&amp;", "&"))
	all := append(page1, ids(body)...)
	slices.Sort(all)
	slices.Sort(made)
	if !slices.Equal(all, made) || strings.Contains(body, `id="next"`) {
		t.Fatalf("two pages list %v, want %v", all, made)
	}

	first, second := last.Steps["first"], last.Steps["second"]
	code, _, body := get(t, c, s.url+"/workflows/"+last.ID)
	for _, want := range []string{`id="workflow-status">running</span>`, `<span class="state available">1 available</span>`,
		`<span class="state pending">1 pending</span>`, `<meta http-equiv="refresh" content="5">`, `id="cancel"`,
		`<a href="/jobs/` + itoa(first.ID) + `">first</a>`} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("workflow page (%d) lacks %s", code, want)
		}
	}
	if strings.Contains(body, `id="retry"`) {
		t.Error("a workflow with no failed step offers Retry")
	}
	_, _, body = get(t, c, s.url+"/jobs/"+itoa(second.ID))
	for _, want := range []string{`<a href="/workflows/` + last.ID + `" id="job-workflow">`, `<dd id="job-step">second</dd>`,
		`<dd id="job-waits"><a href="/jobs/` + itoa(first.ID) + `">`, `<span class="state pending" id="job-state">`} {
		if !strings.Contains(body, want) {
			t.Errorf("job page of a step lacks %s:\n%s", want, body)
		}
	}
	if code, _, _ := get(t, c, s.url+"/workflows/w-none"); code != http.StatusNotFound {
		t.Errorf("unknown workflow: %d", code)
	}

	// Pending is a state like the others: a filter of the jobs list and a column of the queues.
	_, _, body = get(t, c, s.url+"/jobs?state=pending")
	if !strings.Contains(body, `<option value="pending" selected>`) || !strings.Contains(body, `data-id="`+itoa(second.ID)+`"`) ||
		strings.Contains(body, `data-id="`+itoa(first.ID)+`"`) {
		t.Errorf("jobs filtered by pending:\n%s", body)
	}
	if _, _, body = get(t, c, s.url+"/"); !strings.Contains(body, "<th>pending</th>") {
		t.Error("the queues table has no pending column")
	}

	action := s.url + "/workflows/" + last.ID + "/cancel"
	if code, _ := post(t, c, action, nil, "https://evil.example"); code != http.StatusForbidden {
		t.Fatalf("cross-site cancel: %d", code)
	}
	if code, loc := post(t, c, action, nil, s.url); code != http.StatusSeeOther || loc != "/workflows/"+last.ID {
		t.Fatalf("cancel: %d to %q", code, loc)
	}
	_, _, body = get(t, c, s.url+"/workflows/"+last.ID)
	if !strings.Contains(body, `id="workflow-status">cancelled</span>`) || !strings.Contains(body, `id="retry"`) ||
		strings.Contains(body, `id="cancel"`) || strings.Contains(body, `http-equiv="refresh"`) {
		t.Fatalf("workflow page after cancel:\n%s", body)
	}
	if code, loc := post(t, c, s.url+"/workflows/"+last.ID+"/retry", nil, s.url); code != http.StatusSeeOther || loc != "/workflows/"+last.ID {
		t.Fatalf("retry: %d to %q", code, loc)
	}
	if j, err := s.client.Get(ctx, first.ID); err != nil || j.State != rota.StateAvailable {
		t.Fatalf("first step after retry: %+v, %v", j, err)
	}
	if code, _ := post(t, c, s.url+"/workflows/w-none/retry", nil, s.url); code != http.StatusNotFound {
		t.Errorf("retry of an unknown workflow: %d", code)
	}
}

// A workflow of more than graphMax steps is shown a page of steps at a time, in id order, with
// links both ways that together cover every step once; the final step of its fan-in names
// waitsShown of the steps it waits for and counts the rest.
func TestLargeWorkflowPages(t *testing.T) {
	s := newSite(t)
	c := browser(t)
	post(t, c, s.url+"/login", url.Values{"token": {token}}, "")
	const fan = graphMax + 50
	parked := &rota.InsertOpts{Queue: "parked"} // no node serves it: the steps stay as inserted
	wf := rota.NewWorkflow()
	wf.Add("root", okArgs{}, parked)
	names := make([]string, fan)
	for i := range names {
		names[i] = "s" + itoa(int64(i))
		wf.Add(names[i], okArgs{}, parked).After("root")
	}
	wf.Add("final", okArgs{}, parked).After(names...)
	res, err := s.client.InsertWorkflow(context.Background(), wf)
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, st := range res.Steps {
		want = append(want, st.ID)
	}
	slices.Sort(want)

	row := regexp.MustCompile(`<tr data-step="[^"]*">\s*<td>[^<]*</td><td class="num"><a href="/jobs/(\d+)">`)
	link := func(body, id string) string {
		m := regexp.MustCompile(`<a href="([^"]+)" id="` + id + `">`).FindStringSubmatch(body)
		if m == nil {
			return ""
		}
		return strings.ReplaceAll(m[1], "&amp;", "&")
	}
	type page struct {
		ids        []int64
		prev, next string
	}
	read := func(path string) page {
		t.Helper()
		code, _, body := get(t, c, s.url+path)
		if code != http.StatusOK || !strings.Contains(body, `id="workflow-counts">`+itoa(int64(len(want)))+`:`) ||
			!strings.Contains(body, `id="graph-omitted">`+itoa(int64(len(want)))+` steps are too many`) {
			t.Fatalf("%s: %d, no count of every step or no word on the graph:\n%.3000s", path, code, body)
		}
		var p page
		for _, m := range row.FindAllStringSubmatch(body, -1) {
			id, _ := strconv.ParseInt(m[1], 10, 64)
			p.ids = append(p.ids, id)
		}
		if len(p.ids) == 0 || len(p.ids) > stepsPageSize || !slices.IsSorted(p.ids) {
			t.Fatalf("%s shows steps %v", path, p.ids)
		}
		if slices.Contains(p.ids, res.Steps["final"].ID) && !strings.Contains(body, `and `+itoa(fan-waitsShown)+` more</span>`) {
			t.Errorf("the final step's row does not count the steps it waits for past %d", waitsShown)
		}
		p.prev, p.next = link(body, "prev"), link(body, "next")
		return p
	}

	var pages []page
	for p, path := (page{}), "/workflows/"+res.ID; path != ""; path = p.next {
		p = read(path)
		pages = append(pages, p)
		if len(pages) > len(want) {
			t.Fatal("the later-steps links do not end")
		}
	}
	var seen []int64
	for _, p := range pages {
		seen = append(seen, p.ids...)
	}
	if !slices.Equal(seen, want) || pages[0].prev != "" {
		t.Fatalf("the pages onward show %d steps, want the %d in id order; the first page links back: %q", len(seen), len(want), pages[0].prev)
	}
	// Back from the last page: the same pages, in reverse.
	for i, path := len(pages)-2, pages[len(pages)-1].prev; i >= 0; i-- {
		back := read(path)
		if !slices.Equal(back.ids, pages[i].ids) {
			t.Fatalf("page %d read back shows %v, onward %v", i, back.ids, pages[i].ids)
		}
		path = back.prev
		if (i == 0) != (path == "") {
			t.Fatalf("page %d read back links to earlier steps %q", i, path)
		}
	}
}
