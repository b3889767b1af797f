package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/internal/syncbuf"
)

const workflowDoc = `{"steps": [
  {"name": "fetch-a", "kind": "exec", "args": {"program": "true"}, "delay": "1h", "queue": "fetch"},
  {"name": "fetch-b", "kind": "exec", "args": {"program": "true"}, "priority": 5},
  {"name": "merge", "kind": "exec", "args": {"program": "true"}, "after": ["fetch-a", "fetch-b"]},
  {"name": "report", "kind": "exec", "args": {"program": "true"}, "after": ["merge"], "ignore_failed_deps": true}
]}`

// writeFile writes data to a file of the test's and returns its path.
func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runStdin runs the command with stdin as its standard input.
func (e *env) runStdin(stdin string, args ...string) result {
	e.t.Helper()
	var stdout, stderr syncbuf.Buffer
	a := newApp(&stdout, &stderr)
	a.stdin = strings.NewReader(stdin)
	code := a.run(e.t.Context(), append([]string{"--store", e.store}, args...))
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

type shownWorkflow struct {
	ID     string               `json:"id"`
	Status string               `json:"status"`
	Counts map[rota.State]int64 `json:"counts"`
	Steps  []rota.JobRow        `json:"steps"`
}

func TestWorkflowsInsertListShow(t *testing.T) {
	e := newEnv(t)
	file := writeFile(t, "wf.json", workflowDoc)
	id := strings.TrimSpace(e.run("workflows", "insert", "--file", file).ok(t).stdout)
	if !strings.HasPrefix(id, "w") || strings.ContainsAny(id, " \n") {
		t.Fatalf("insert printed %q, want the workflow id alone", id)
	}

	list := e.run("workflows", "list").ok(t).stdout
	for _, want := range []string{"ID", "STATUS", "BY STATE", id + "  running  4      1 available, 1 scheduled, 2 pending"} {
		if !strings.Contains(list, want) {
			t.Errorf("list does not show %q:\n%s", want, list)
		}
	}
	var listed []shownWorkflow
	e.run("-o", "json", "workflows", "list").ok(t).decode(t, &listed)
	if len(listed) != 1 || listed[0].ID != id || listed[0].Status != "running" || listed[0].Counts[rota.StatePending] != 2 || listed[0].Steps != nil {
		t.Fatalf("JSON list = %+v", listed)
	}

	show := e.run("workflows", "show", id).ok(t).stdout
	for _, want := range []string{"Workflow:  " + id, "Status:    running", "Steps:     4 (1 available, 1 scheduled, 2 pending)",
		"STEP", "WAITS FOR", "fetch-a  1    exec  scheduled  -", "merge    3    exec  pending    fetch-a, fetch-b ",
		"report   4    exec  pending    merge (however they end)"} {
		if !strings.Contains(show, want) {
			t.Errorf("show does not include %q:\n%s", want, show)
		}
	}
	var wf shownWorkflow
	e.run("-o", "json", "workflows", "show", id).ok(t).decode(t, &wf)
	if wf.ID != id || wf.Status != "running" || len(wf.Steps) != 4 || wf.Steps[0].Queue != "fetch" || wf.Steps[1].Priority != 5 ||
		wf.Steps[3].Step != "report" || !wf.Steps[3].IgnoreFailedDeps {
		t.Fatalf("JSON show = %+v", wf)
	}

	e.run("enqueue", "exec", "--", "true").ok(t)
	var rows []rota.JobRow
	e.run("-o", "json", "jobs", "list", "--workflow", id).ok(t).decode(t, &rows)
	if len(rows) != 4 || rows[0].Step != "report" {
		t.Fatalf("jobs of the workflow = %+v", rows)
	}

	// The same document from the standard input, with the steps in JSON.
	var in struct {
		ID    string                  `json:"id"`
		Steps map[string]*rota.JobRow `json:"steps"`
	}
	e.runStdin(workflowDoc, "-o", "json", "workflows", "insert", "-f", "-").ok(t).decode(t, &in)
	if in.ID == id || len(in.Steps) != 4 || in.Steps["merge"].State != rota.StatePending || len(in.Steps["merge"].DependsOn) != 2 {
		t.Fatalf("insert from stdin = %+v", in)
	}
	// Newest first, one page at a time.
	r := e.run("-o", "json", "workflows", "list", "--limit", "1").ok(t)
	r.decode(t, &listed)
	if len(listed) != 1 || listed[0].ID != in.ID {
		t.Fatalf("first page = %+v", listed)
	}
	if !strings.Contains(e.run("workflows", "list", "--limit", "1").stderr, "--before "+in.ID) {
		t.Fatalf("a full page does not say how to get the next")
	}
	e.run("-o", "json", "workflows", "list", "--limit", "1", "--before", in.ID).ok(t).decode(t, &listed)
	if len(listed) != 1 || listed[0].ID != id {
		t.Fatalf("second page = %+v", listed)
	}
}

func TestWorkflowsCancelAndRetry(t *testing.T) {
	e := newEnv(t)
	id := strings.TrimSpace(e.run("workflows", "insert", "--file", writeFile(t, "wf.json", workflowDoc)).ok(t).stdout)
	if out := e.run("workflows", "cancel", id).ok(t).stdout; out != "workflow "+id+": 4 steps cancelled\n" {
		t.Fatalf("cancel: %q", out)
	}
	if out := e.run("workflows", "cancel", id).ok(t).stdout; !strings.Contains(out, "had already ended cancelled; nothing to cancel") {
		t.Fatalf("second cancel: %q", out)
	}
	if show := e.run("workflows", "show", id).ok(t).stdout; !strings.Contains(show, "Status:    cancelled") {
		t.Fatalf("show after cancel:\n%s", show)
	}
	var changed struct {
		Workflow shownWorkflow `json:"workflow"`
		Changed  []rota.JobRow `json:"changed"`
	}
	e.run("-o", "json", "workflows", "retry", id).ok(t).decode(t, &changed)
	if len(changed.Changed) != 4 || changed.Workflow.Status != "running" || changed.Workflow.Counts[rota.StatePending] != 2 {
		t.Fatalf("retry = %+v", changed)
	}
	if out := e.run("workflows", "retry", id).ok(t).stdout; !strings.Contains(out, "has no failed steps (it is running); nothing to retry") {
		t.Fatalf("second retry: %q", out)
	}
	e.run("-o", "json", "workflows", "cancel", id).ok(t).decode(t, &changed)
	if len(changed.Changed) != 4 || changed.Workflow.Status != "cancelled" {
		t.Fatalf("cancel in JSON = %+v", changed)
	}
	if out := e.run("workflows", "retry", id).ok(t).stdout; out != "workflow "+id+": 4 steps to run again: fetch-a, fetch-b, merge, report\n" {
		t.Fatalf("retry: %q", out)
	}
}

// Errors are said once, in rota's words, and a refused workflow inserts nothing.
func TestWorkflowsBadInput(t *testing.T) {
	e := newEnv(t)
	once := func(r result, want string) {
		t.Helper()
		r.fails(t, want)
		if n := strings.Count(r.stderr, "rota:"); n != 1 || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("the error is not said once, on one line:\n%s", r.stderr)
		}
	}
	for _, cmd := range []string{"show", "cancel", "retry"} {
		once(e.run("workflows", cmd, "w-none"), "workflow w-none not found in sqlite:")
	}
	insert := func(doc string) result { return e.run("workflows", "insert", "--file", writeFile(t, "wf.json", doc)) }
	once(insert(`{"steps":[{"name":"a","kind":"exec","args":{"program":"true"},"after":["c"]},
		{"name":"b","kind":"exec","args":{"program":"true"},"after":["a"]},{"name":"c","kind":"exec","args":{"program":"true"},"after":["b"]}]}`),
		"rota: insert workflow: invalid input: workflow has a cycle: steps a, b, c wait for each other")
	once(insert(`{"steps":[{"name":"a","kind":"report","after":["nope"]}]}`), `step "a" waits for "nope", which is not a step of the workflow`)
	once(insert(`{"steps":[{"name":"a","kind":"report","aftr":["b"]}]}`), `wf.json: json: unknown field "aftr"`)
	once(insert(`{"steps":[{"name":"a","kind":"exec","args":{"program":""}}]}`), `wf.json: step "a": "args"`)
	once(insert(`{"steps":[]}`), `wf.json: "steps" holds 0 steps`)
	once(insert("{\"steps\": [\n  {\"name\": \"a\",}\n]}"), "wf.json is not valid JSON: invalid character '}' looking for beginning of object key string at line 2, column 16")
	once(insert(`{"steps":[{"name":"a","kind":"report"}]} {}`), "data after the JSON value")
	once(insert(" \n"), "wf.json is empty")
	once(e.run("workflows", "insert"), "insert needs the workflow's JSON document: --file FILE")
	once(e.run("workflows", "insert", "--file", filepath.Join(t.TempDir(), "none.json")), "no such file")
	once(e.runStdin("", "workflows", "insert", "--file", "-"), "--file: the standard input is empty")
	once(e.run("workflows", "list", "--limit", "0"), "--limit 0: must be at least 1")
	assertNoJobs(t, e)
	if out := e.run("workflows", "list").ok(t).stdout; out != "no workflows\n" {
		t.Fatalf("empty list: %q", out)
	}
	if out := e.run("-o", "json", "workflows", "list").ok(t).stdout; out != "[]\n" {
		t.Fatalf("empty JSON list: %q", out)
	}
}
