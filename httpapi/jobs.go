package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/builtin"
)

// jobRequest is one job to enqueue. Only kind is required; args default to {}.
type jobRequest struct {
	Kind        string          `json:"kind"`
	Args        json.RawMessage `json:"args"`
	Queue       string          `json:"queue"`
	Priority    int             `json:"priority"`
	MaxAttempts int             `json:"max_attempts"`
	// RunAt delays the job until then (RFC 3339); Delay ("90s", "2h") delays it from now.
	RunAt     *time.Time `json:"run_at"`
	Delay     string     `json:"delay"`
	ExpiresAt *time.Time `json:"expires_at"`
	// UniqueKey makes a second insert with the same key, while the first job is not final,
	// return the first instead (duplicate: true); with Supersede it replaces the first if that
	// one has not started.
	UniqueKey  string          `json:"unique_key"`
	Supersede  bool            `json:"supersede"`
	Tags       []string        `json:"tags"`
	Metadata   json.RawMessage `json:"metadata"`
	DropIfBusy int             `json:"drop_if_busy"`
}

// insertResult is the answer to an enqueue: the job, or the one whose unique key it matched.
type insertResult struct {
	Job       *rota.JobRow `json:"job"`
	Duplicate bool         `json:"duplicate"`
}

// kindArgs returns a request's args, {} when absent, checked as kind's worker will read them
// when kind is built in (exec, http): a misspelt field or a missing program is then refused
// now, with the reason, instead of inserting a job that fails on its first attempt.
func kindArgs(kind string, args json.RawMessage) (json.RawMessage, error) {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	if err := builtin.Validate(kind, args); err != nil {
		return nil, fmt.Errorf(`"args": %w`, err)
	}
	return args, nil
}

// params turns a request into what the client inserts.
func (j *jobRequest) params() (rota.InsertManyParams, error) {
	if j.Kind == "" {
		return rota.InsertManyParams{}, errors.New(`"kind" is required`)
	}
	args, err := kindArgs(j.Kind, j.Args)
	if err != nil {
		return rota.InsertManyParams{}, err
	}
	opts := &rota.InsertOpts{
		Queue: j.Queue, Priority: j.Priority, MaxAttempts: j.MaxAttempts, UniqueKey: j.UniqueKey,
		Supersede: j.Supersede, Tags: j.Tags, DropIfBusy: j.DropIfBusy,
	}
	if len(j.Metadata) > 0 && string(j.Metadata) != "null" {
		opts.Metadata = j.Metadata
	}
	switch {
	case j.RunAt != nil && j.Delay != "":
		return rota.InsertManyParams{}, errors.New(`give "run_at" or "delay", not both`)
	case j.RunAt != nil:
		opts.RunAt = *j.RunAt
	case j.Delay != "":
		d, err := time.ParseDuration(j.Delay)
		if err != nil || d < 0 {
			return rota.InsertManyParams{}, errors.New(`"delay" ` + strconv.Quote(j.Delay) + ` is not a duration such as "90s" or "2h"`)
		}
		opts.RunAt = time.Now().Add(d)
	}
	if j.ExpiresAt != nil {
		opts.ExpiresAt = *j.ExpiresAt
	}
	return rota.InsertManyParams{Args: rota.RawArgs{KindName: j.Kind, JSON: args}, Opts: opts}, nil
}

func (a *api) enqueue(w http.ResponseWriter, r *http.Request) {
	var req jobRequest
	if !a.decode(w, r, &req) {
		return
	}
	p, err := req.params()
	if err != nil {
		invalid(w, "%v", err)
		return
	}
	res, err := a.client.Insert(r.Context(), p.Args, p.Opts)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	status := http.StatusCreated
	if res.Duplicate {
		status = http.StatusOK
	}
	writeJSON(w, status, insertResult{Job: res.Job, Duplicate: res.Duplicate})
}

// batchMax bounds one batch, so that one request is one reasonable transaction.
const batchMax = 10_000

func (a *api) enqueueBatch(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Jobs []jobRequest `json:"jobs"`
	}
	if !a.decode(w, r, &req) {
		return
	}
	if len(req.Jobs) == 0 || len(req.Jobs) > batchMax {
		invalid(w, `"jobs" holds %d jobs; send 1 to %d`, len(req.Jobs), batchMax)
		return
	}
	params := make([]rota.InsertManyParams, len(req.Jobs))
	for i := range req.Jobs {
		p, err := req.Jobs[i].params()
		if err != nil {
			invalid(w, "job %d of %d: %v", i+1, len(req.Jobs), err)
			return
		}
		params[i] = p
	}
	res, err := a.client.InsertMany(r.Context(), params)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"jobs": insertResults(res)})
}

// listMax bounds one page.
const listMax = 1000

func (a *api) listJobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := rota.ListParams{Queue: q.Get("queue"), Kind: q.Get("kind"), Workflow: q.Get("workflow"), Limit: 100}
	if err := listFilters(q, &p); err != nil {
		invalid(w, "%s", err)
		return
	}
	for _, v := range q["state"] {
		for s := range strings.SplitSeq(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				p.States = append(p.States, rota.State(s))
			}
		}
	}
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			invalid(w, "after %q is not a job id", v)
			return
		}
		p.AfterID = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > listMax {
			invalid(w, "limit %q: give 1 to %d", v, listMax)
			return
		}
		p.Limit = n
	}
	// Newest first, as the dashboard and `rota jobs list` show jobs.
	switch q.Get("order") {
	case "", "desc":
		p.Desc = true
	case "asc":
	default:
		invalid(w, "order %q: asc or desc", q.Get("order"))
		return
	}
	jobs, err := a.client.List(r.Context(), p)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	page := map[string]any{"jobs": jobs}
	if len(jobs) == p.Limit {
		// Pass it as ?after= for the next page.
		page["next_after"] = jobs[len(jobs)-1].ID
	}
	if jobs == nil {
		page["jobs"] = []*rota.JobRow{}
	}
	writeJSON(w, http.StatusOK, page)
}

func (a *api) getJob(w http.ResponseWriter, r *http.Request) {
	a.onJob(w, r, a.client.Get)
}

func (a *api) cancelJob(w http.ResponseWriter, r *http.Request) {
	a.onJob(w, r, a.client.Cancel)
}

func (a *api) retryJob(w http.ResponseWriter, r *http.Request) {
	a.onJob(w, r, a.client.Retry)
}

func (a *api) deleteJob(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	if err := a.client.Delete(r.Context(), id); err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
}

// onJob answers with the job f returns for the route's id.
func (a *api) onJob(w http.ResponseWriter, r *http.Request, f func(context.Context, int64) (*rota.JobRow, error)) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	job, err := f(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, job)
}

// waitResult is the answer to a wait: the job as it is, and whether it is final. A job that is
// not final when the timeout passed is not an error; the caller asks again.
type waitResult struct {
	Job  *rota.JobRow `json:"job"`
	Done bool         `json:"done"`
}

func (a *api) waitJob(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	timeout := a.waitMax
	if v := r.URL.Query().Get("timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			invalid(w, "timeout %q is not a positive duration such as 30s", v)
			return
		}
		timeout = min(d, a.waitMax)
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	job, err := a.client.Wait(ctx, id)
	var failed *rota.JobFailedError
	switch {
	case err == nil || errors.As(err, &failed):
		writeJSON(w, http.StatusOK, waitResult{Job: job, Done: true})
	case ctx.Err() != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
		// The timeout passed, or the server is shutting down (it cancels its requests'
		// contexts): answer with the job as it is, and the caller asks again.
		getCtx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
		defer cancel()
		job, err := a.client.Get(getCtx, id)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, waitResult{Job: job, Done: job.State.Final()})
	default:
		a.fail(w, r, err)
	}
}
