package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/httpapi"
)

type workflowInserted struct {
	ID    string                  `json:"id"`
	Steps map[string]*rota.JobRow `json:"steps"`
}

type workflowShown struct {
	ID        string               `json:"id"`
	Status    string               `json:"status"`
	Counts    map[rota.State]int64 `json:"counts"`
	CreatedAt time.Time            `json:"created_at"`
	Steps     []rota.JobRow        `json:"steps"`
}

type workflowChanged struct {
	Workflow workflowShown `json:"workflow"`
	Changed  []rota.JobRow `json:"changed"`
}

// A workflow posted as one document runs in dependency order, each step with its own options,
// and reads back with its status, counts and steps.
func TestWorkflowInsertRunAndShow(t *testing.T) {
	s := newServer(t)
	s.startNode(t)
	var in workflowInserted
	body := `{"steps": [
		{"name": "greet-b", "kind": "greet", "args": {"name": "b"}, "queue": "default", "tags": ["b"]},
		{"name": "greet-a", "kind": "greet", "args": {"name": "a"}, "priority": 5, "max_attempts": 2, "metadata": {"by": "test"}},
		{"name": "last", "kind": "greet", "args": {"name": "z"}, "after": ["greet-a", "greet-b"], "unique_key": "last-z"}
	]}`
	if code := s.call(t, "POST", "/v1/workflows", body, &in); code != http.StatusCreated || !strings.HasPrefix(in.ID, "w") || len(in.Steps) != 3 {
		t.Fatalf("insert: %d %+v", code, in)
	}
	last, a := in.Steps["last"], in.Steps["greet-a"]
	if last.State != rota.StatePending || last.Step != "last" || last.Workflow != in.ID || len(last.DependsOn) != 2 || last.UniqueKey != "last-z" {
		t.Fatalf("last step %+v", last)
	}
	if a.Priority != 5 || a.MaxAttempts != 2 || string(a.Metadata) != `{"by":"test"}` || len(in.Steps["greet-b"].Tags) != 1 {
		t.Fatalf("step options not kept: %+v, %+v", a, in.Steps["greet-b"])
	}
	var done struct {
		Job  rota.JobRow `json:"job"`
		Done bool        `json:"done"`
	}
	if code := s.call(t, "GET", "/v1/jobs/"+itoa(last.ID)+"/wait?timeout=10s", "", &done); code != http.StatusOK || done.Job.State != rota.StateCompleted {
		t.Fatalf("wait for the last step: %d %+v", code, done)
	}
	var wf workflowShown
	if code := s.call(t, "GET", "/v1/workflows/"+in.ID, "", &wf); code != http.StatusOK || wf.ID != in.ID || wf.Status != "completed" ||
		wf.Counts[rota.StateCompleted] != 3 || len(wf.Steps) != 3 || wf.CreatedAt.IsZero() {
		t.Fatalf("get: %d %+v", code, wf)
	}
	var page struct {
		Jobs []rota.JobRow `json:"jobs"`
	}
	s.call(t, "POST", "/v1/jobs", `{"kind":"greet","delay":"1h"}`, nil)
	if s.call(t, "GET", "/v1/jobs?workflow="+in.ID, "", &page); len(page.Jobs) != 3 {
		t.Fatalf("jobs of the workflow: %+v", page.Jobs)
	}
	for _, j := range page.Jobs {
		if j.Workflow != in.ID {
			t.Errorf("job %d of workflow %q listed under %s", j.ID, j.Workflow, in.ID)
		}
	}
}

func TestWorkflowListPages(t *testing.T) {
	s := newServer(t)
	var ids []string
	for range 3 {
		var in workflowInserted
		s.call(t, "POST", "/v1/workflows", `{"steps":[{"name":"a","kind":"greet","delay":"1h"},{"name":"b","kind":"greet","after":["a"]}]}`, &in)
		ids = append(ids, in.ID)
		time.Sleep(2 * time.Millisecond) // ids order by the millisecond they were made in
	}
	var page struct {
		Workflows  []workflowShown `json:"workflows"`
		NextBefore string          `json:"next_before"`
	}
	if code := s.call(t, "GET", "/v1/workflows", "", &page); code != http.StatusOK || page.Workflows == nil || len(page.Workflows) != 3 {
		t.Fatalf("list: %d %+v", code, page)
	}
	if code := s.call(t, "GET", "/v1/workflows?limit=2", "", &page); code != http.StatusOK || len(page.Workflows) != 2 ||
		page.Workflows[0].ID != ids[2] || page.Workflows[1].ID != ids[1] || page.NextBefore != ids[1] {
		t.Fatalf("first page: %d %+v; ids %v", code, page, ids)
	}
	if w := page.Workflows[0]; w.Status != "running" || w.Counts[rota.StateScheduled] != 1 || w.Counts[rota.StatePending] != 1 || w.Steps != nil {
		t.Fatalf("listed workflow %+v", w)
	}
	page.NextBefore = ""
	if s.call(t, "GET", "/v1/workflows?limit=2&before="+ids[1], "", &page); len(page.Workflows) != 1 || page.Workflows[0].ID != ids[0] || page.NextBefore != "" {
		t.Fatalf("second page: %+v", page)
	}
	s.wantError(t, "GET", "/v1/workflows?limit=0", "", 400, "invalid", "limit")
}

// Cancel ends the waiting steps; retry runs the failed ones again in order, the first now and
// those after it once it completes.
func TestWorkflowCancelAndRetry(t *testing.T) {
	s := newServer(t)
	var in workflowInserted
	s.call(t, "POST", "/v1/workflows", `{"steps":[{"name":"first","kind":"greet","delay":"1h"},
		{"name":"then","kind":"greet","after":["first"]},{"name":"report","kind":"greet","after":["then"],"ignore_failed_deps":true}]}`, &in)
	var res workflowChanged
	if code := s.call(t, "POST", "/v1/workflows/"+in.ID+"/cancel", "", &res); code != http.StatusOK || len(res.Changed) != 3 ||
		res.Workflow.Status != "cancelled" || res.Workflow.Counts[rota.StateCancelled] != 3 {
		t.Fatalf("cancel: %d %+v", code, res)
	}
	if code := s.call(t, "POST", "/v1/workflows/"+in.ID+"/cancel", "", &res); code != http.StatusOK || len(res.Changed) != 0 {
		t.Fatalf("second cancel: %d %+v", code, res)
	}
	if code := s.call(t, "POST", "/v1/workflows/"+in.ID+"/retry", "", &res); code != http.StatusOK || len(res.Changed) != 3 || res.Workflow.Status != "running" {
		t.Fatalf("retry: %d %+v", code, res)
	}
	states := map[string]rota.State{}
	for _, j := range res.Workflow.Steps {
		states[j.Step] = j.State
	}
	if states["first"] != rota.StateAvailable || states["then"] != rota.StatePending || states["report"] != rota.StatePending {
		t.Fatalf("steps after retry: %v", states)
	}
}

func TestWorkflowRefused(t *testing.T) {
	s := newServer(t)
	s.wantError(t, "POST", "/v1/workflows", `{"steps":[{"name":"a","kind":"greet","after":["c"]},{"name":"b","kind":"greet","after":["a"]},
		{"name":"c","kind":"greet","after":["b"]}]}`, 400, "invalid", "steps a, b, c wait for each other")
	s.wantError(t, "POST", "/v1/workflows", `{"steps":[{"name":"a","kind":"greet","after":["a"]}]}`, 400, "invalid", `step "a" waits for itself`)
	s.wantError(t, "POST", "/v1/workflows", `{"steps":[{"name":"a","kind":"greet","after":["nope"]}]}`, 400, "invalid",
		`step "a" waits for "nope", which is not a step of the workflow`)
	s.wantError(t, "POST", "/v1/workflows", `{"steps":[{"name":"a","kind":"greet"},{"name":"a","kind":"greet"}]}`, 400, "invalid", `two steps are named "a"`)
	s.wantError(t, "POST", "/v1/workflows", `{"steps":[]}`, 400, "invalid", `"steps" holds 0 steps`)
	s.wantError(t, "POST", "/v1/workflows", `{"steps":[{"kind":"greet"}]}`, 400, "invalid", `step 1 of 1: "name" is required`)
	s.wantError(t, "POST", "/v1/workflows", `{"steps":[{"name":"a"}]}`, 400, "invalid", `step "a": "kind" is required`)
	s.wantError(t, "POST", "/v1/workflows", `{"steps":[{"name":"a","kind":"greet","afterr":[]}]}`, 400, "invalid", `unknown field "afterr"`)
	s.wantError(t, "POST", "/v1/workflows", `{"steps":[{"name":"a","kind":"greet","drop_if_busy":3}]}`, 400, "invalid", `"drop_if_busy" applies to single jobs`)
	s.wantError(t, "POST", "/v1/workflows", `{"steps":[{"name":"a","kind":"exec","args":{}}]}`, 400, "invalid", `step "a": "args"`)
	s.wantError(t, "POST", "/v1/workflows", `{"steps":[{"name":"a b","kind":"greet"}]}`, 400, "invalid", `step name "a b"`)
	for _, route := range []string{"GET /v1/workflows/w-none", "POST /v1/workflows/w-none/cancel", "POST /v1/workflows/w-none/retry"} {
		method, path, _ := strings.Cut(route, " ")
		s.wantError(t, method, path, "", 404, "not_found", "w-none")
	}
	if n := s.countJobs(t); n != 0 {
		t.Fatalf("%d jobs inserted by refused workflows", n)
	}
}

type batchInserted struct {
	ID       string      `json:"id"`
	Callback rota.JobRow `json:"callback"`
	Jobs     []inserted  `json:"jobs"`
}

// A batch's callback waits for every job, those added later included; once it has been
// released the batch is closed.
func TestBatchInsertAddAndClose(t *testing.T) {
	s := newServer(t)
	var b batchInserted
	if code := s.call(t, "POST", "/v1/batches", `{"jobs":[{"kind":"greet","args":{"name":"a"},"queue":"held"},{"kind":"greet","queue":"held"}],
		"callback":{"kind":"greet","args":{"name":"done"},"queue":"cb"}}`, &b); code != http.StatusCreated || len(b.Jobs) != 2 {
		t.Fatalf("insert: %d %+v", code, b)
	}
	if b.Callback.State != rota.StatePending || b.Callback.Step != rota.BatchCallbackStep || b.Callback.Workflow != b.ID ||
		b.Callback.Queue != "cb" || b.Jobs[0].Job.Step != "job-1" || b.Jobs[0].Job.Queue != "held" {
		t.Fatalf("batch %+v", b)
	}
	cb := "/v1/batches/" + itoa(b.Callback.ID) + "/jobs"
	var added batchInserted
	if code := s.call(t, "POST", cb, `{"jobs":[{"kind":"greet","queue":"held"}]}`, &added); code != http.StatusCreated ||
		len(added.Jobs) != 1 || added.Jobs[0].Job.Step != "job-3" || added.Jobs[0].Job.Workflow != b.ID {
		t.Fatalf("add: %d %+v", code, added)
	}
	var wf workflowShown
	if s.call(t, "GET", "/v1/workflows/"+b.ID, "", &wf); len(wf.Steps) != 4 || wf.Counts[rota.StateAvailable] != 3 || wf.Counts[rota.StatePending] != 1 {
		t.Fatalf("batch as a workflow: %+v", wf)
	}
	// Ending every job releases the callback, however they ended.
	for _, j := range append(b.Jobs, added.Jobs...) {
		s.call(t, "POST", "/v1/jobs/"+itoa(j.Job.ID)+"/cancel", "", nil)
	}
	var callback rota.JobRow
	if s.call(t, "GET", "/v1/jobs/"+itoa(b.Callback.ID), "", &callback); callback.State != rota.StateAvailable {
		t.Fatalf("callback after every job ended: %s", callback.State)
	}
	s.wantError(t, "POST", cb, `{"jobs":[{"kind":"greet"}]}`, 409, "not_pending", "not pending")
	if code := s.call(t, "GET", "/v1/workflows/"+b.ID, "", &wf); code != http.StatusOK || len(wf.Steps) != 4 {
		t.Fatalf("a refused add inserted steps: %+v", wf)
	}
}

func TestBatchRefused(t *testing.T) {
	s := newServer(t)
	s.wantError(t, "POST", "/v1/batches", `{"jobs":[{"kind":"greet"}]}`, 400, "invalid", `"callback" is required`)
	s.wantError(t, "POST", "/v1/batches", `{"jobs":[],"callback":{"kind":"greet"}}`, 400, "invalid", `"jobs" holds 0 jobs`)
	s.wantError(t, "POST", "/v1/batches", `{"jobs":[{"kind":"greet"},{"queue":"q"}],"callback":{"kind":"greet"}}`, 400, "invalid", `job 2 of 2: "kind" is required`)
	s.wantError(t, "POST", "/v1/batches", `{"jobs":[{"kind":"greet"}],"callback":{"kind":"greet","drop_if_busy":1}}`, 400, "invalid", `callback: "drop_if_busy"`)
	s.wantError(t, "POST", "/v1/batches", `{"jobs":[{"kind":"greet"}],"callback":{"kind":"greet","priority":5000}}`, 400, "invalid", "priority 5000")
	s.wantError(t, "POST", "/v1/batches/99/jobs", `{"jobs":[{"kind":"greet"}]}`, 404, "not_found", "99")
	s.wantError(t, "POST", "/v1/batches/w0123/jobs", `{"jobs":[{"kind":"greet"}]}`, 400, "invalid", "callback's job id")
	s.wantError(t, "POST", "/v1/batches/abc/jobs", `{"jobs":[{"kind":"greet"}]}`, 400, "invalid", `callback job id "abc"`)
	var plain inserted
	s.call(t, "POST", "/v1/jobs", `{"kind":"greet","delay":"1h"}`, &plain)
	s.wantError(t, "POST", "/v1/batches/"+itoa(plain.Job.ID)+"/jobs", `{"jobs":[{"kind":"greet"}]}`, 400, "invalid", "not a batch's callback")
	if n := s.countJobs(t); n != 1 {
		t.Fatalf("%d jobs, want only the plain one", n)
	}
}

// FuzzWorkflowRequest sends arbitrary bodies to POST /v1/workflows and POST /v1/batches on a
// real SQLite store: whatever the body, the answer is 201 with what was inserted or 4xx with a
// JSON error, never a 5xx that would mean a caller's bytes reached the store unchecked.
func FuzzWorkflowRequest(f *testing.F) {
	for _, seed := range []string{
		`{"steps":[{"name":"a","kind":"greet"},{"name":"b","kind":"greet","after":["a"],"ignore_failed_deps":true}]}`,
		`{"steps":[{"name":"a","kind":"greet","after":["b"]},{"name":"b","kind":"greet","after":["a"]}]}`,
		`{"steps":[{"name":"a","kind":"greet","after":["a","a"],"unique_key":"k","delay":"1h"}]}`,
		`{"steps":[{"name":"\u0000","kind":"greet","after":[""]}]}`,
		`{"jobs":[{"kind":"greet"}],"callback":{"kind":"greet","queue":"cb"}}`,
		`{"jobs":[{"kind":"greet","unique_key":"k"},{"kind":"greet","unique_key":"k"}],"callback":{"kind":"greet"}}`,
		`{"steps":null}`, `{"jobs":[],"callback":null}`, `[]`, ``,
	} {
		f.Add(false, []byte(seed))
		f.Add(true, []byte(seed))
	}
	h, _ := newHandler(f, httpapi.Config{Token: token})
	f.Fuzz(func(t *testing.T, batch bool, body []byte) {
		path := "/v1/workflows"
		if batch {
			path = "/v1/batches"
		}
		r := httptest.NewRequest("POST", path, strings.NewReader(string(body)))
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var out struct {
			ID    string `json:"id"`
			Error string `json:"error"`
			Code  string `json:"code"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("%d, not JSON (%v): %s", w.Code, err, w.Body)
		}
		switch {
		case w.Code == http.StatusCreated && out.ID != "":
		case w.Code >= 400 && w.Code < 500 && out.Error != "" && out.Code != "":
		default:
			t.Fatalf("%d for body %q: %s", w.Code, body, w.Body)
		}
	})
}
