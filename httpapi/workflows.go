package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/rotahq/rota"
)

// stepRequest is one step of a workflow: a job, its name, and the steps it waits for.
type stepRequest struct {
	Name string `json:"name"`
	jobRequest
	After            []string `json:"after"`
	IgnoreFailedDeps bool     `json:"ignore_failed_deps"`
}

// workflowRequest is the body of POST /v1/workflows, and the document `rota workflows insert`
// reads (ParseWorkflow).
type workflowRequest struct {
	Steps []stepRequest `json:"steps"`
}

// ParseWorkflow reads a workflow document, as POST /v1/workflows takes it, refusing unknown
// fields and trailing data. The rota command takes the same document from a file; one parser
// keeps the two alike. Errors do not name the source: the caller knows it.
func ParseWorkflow(data []byte) (*rota.Workflow, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var req workflowRequest
	err := dec.Decode(&req)
	if err == nil && dec.Decode(&struct{}{}) != io.EOF {
		err = errors.New("data after the JSON value")
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("no JSON document")
	}
	if err != nil {
		return nil, err
	}
	return req.workflow()
}

// workflow checks every step as POST /v1/jobs checks a job and builds the workflow; the names
// and the graph (dangling names, cycles) are the library's to check, in its words.
func (req *workflowRequest) workflow() (*rota.Workflow, error) {
	if len(req.Steps) == 0 || len(req.Steps) > batchMax {
		return nil, fmt.Errorf(`"steps" holds %d steps; send 1 to %d`, len(req.Steps), batchMax)
	}
	wf := rota.NewWorkflow()
	for i := range req.Steps {
		s := &req.Steps[i]
		if s.Name == "" {
			return nil, fmt.Errorf(`step %d of %d: "name" is required`, i+1, len(req.Steps))
		}
		p, err := s.groupParams()
		if err != nil {
			return nil, fmt.Errorf("step %q: %w", s.Name, err)
		}
		step := wf.Add(s.Name, p.Args, p.Opts).After(s.After...)
		if s.IgnoreFailedDeps {
			step.IgnoreFailedDeps()
		}
	}
	return wf, nil
}

// groupParams is params for a job inserted with others as one (a workflow's step, a batch's
// job), where a best-effort insert means nothing: the whole is inserted or refused, and the
// library does not check a busy queue for it. Refusing drop_if_busy says so, where ignoring it
// would insert what the caller asked to drop.
func (j *jobRequest) groupParams() (rota.InsertManyParams, error) {
	if j.DropIfBusy != 0 {
		return rota.InsertManyParams{}, errors.New(`"drop_if_busy" applies to single jobs, not to those of a workflow or batch, which are inserted all or none`)
	}
	return j.params()
}

// workflowSummary is one workflow of a list: its steps counted by state, and the status that
// sums them up (rota.WorkflowStatus).
type workflowSummary struct {
	ID        string               `json:"id"`
	Status    string               `json:"status"`
	Counts    map[rota.State]int64 `json:"counts"`
	CreatedAt time.Time            `json:"created_at"`
}

func summarize(s rota.WorkflowStats) workflowSummary {
	return workflowSummary{ID: s.ID, Status: rota.WorkflowStatus(s.Counts), Counts: s.Counts, CreatedAt: s.CreatedAt}
}

// workflowDetail is one workflow with every step.
type workflowDetail struct {
	workflowSummary
	Steps []*rota.JobRow `json:"steps"`
}

func (a *api) insertWorkflow(w http.ResponseWriter, r *http.Request) {
	var req workflowRequest
	if !a.decode(w, r, &req) {
		return
	}
	wf, err := req.workflow()
	if err != nil {
		invalid(w, "%v", err)
		return
	}
	res, err := a.client.InsertWorkflow(r.Context(), wf)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"id": res.ID, "steps": res.Steps})
}

func (a *api) listWorkflows(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := rota.WorkflowListParams{Before: q.Get("before"), Limit: 100}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > listMax {
			invalid(w, "limit %q: give 1 to %d", v, listMax)
			return
		}
		p.Limit = n
	}
	stats, err := a.client.Workflows(r.Context(), p)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := make([]workflowSummary, len(stats))
	for i, s := range stats {
		out[i] = summarize(s)
	}
	page := map[string]any{"workflows": out}
	if len(out) == p.Limit {
		// Pass it as ?before= for the next page.
		page["next_before"] = out[len(out)-1].ID
	}
	writeJSON(w, http.StatusOK, page)
}

func (a *api) getWorkflow(w http.ResponseWriter, r *http.Request) {
	info, err := a.client.Workflow(r.Context(), r.PathValue("id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, workflowDetail{workflowSummary: summarize(info.WorkflowStats), Steps: info.Steps})
}

func (a *api) cancelWorkflow(w http.ResponseWriter, r *http.Request) {
	a.onWorkflow(w, r, a.client.CancelWorkflow)
}

func (a *api) retryWorkflow(w http.ResponseWriter, r *http.Request) {
	a.onWorkflow(w, r, a.client.RetryWorkflow)
}

// onWorkflow applies f to the route's workflow and answers with the steps f changed and the
// workflow as it left it: a cancel leaves running steps running until their handlers return,
// and a retry leaves completed steps alone, so the caller is shown both.
func (a *api) onWorkflow(w http.ResponseWriter, r *http.Request, f func(context.Context, string) ([]*rota.JobRow, error)) {
	id := r.PathValue("id")
	changed, err := f(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	info, err := a.client.Workflow(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if changed == nil {
		changed = []*rota.JobRow{}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"workflow": workflowDetail{workflowSummary: summarize(info.WorkflowStats), Steps: info.Steps},
		"changed":  changed,
	})
}
