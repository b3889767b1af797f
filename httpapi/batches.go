package httpapi

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/rotahq/rota"
)

func (a *api) insertBatch(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Jobs     []jobRequest `json:"jobs"`
		Callback *jobRequest  `json:"callback"`
	}
	if !a.decode(w, r, &req) {
		return
	}
	if req.Callback == nil {
		invalid(w, `"callback" is required: the job that runs once every job of the batch has ended`)
		return
	}
	cb, err := req.Callback.groupParams()
	if err != nil {
		invalid(w, "callback: %v", err)
		return
	}
	jobs, ok := batchJobs(w, req.Jobs)
	if !ok {
		return
	}
	b := rota.NewBatch(cb.Args, cb.Opts)
	for _, j := range jobs {
		b.Add(j.Args, j.Opts)
	}
	res, err := a.client.InsertBatch(r.Context(), b)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"id": res.ID, "callback": res.Callback, "jobs": insertResults(res.Jobs)})
}

func (a *api) addToBatch(w http.ResponseWriter, r *http.Request) {
	v := r.PathValue("callback_id")
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		if strings.HasPrefix(v, "w") {
			// A batch's own id is the natural thing to try; the callback's names it as well.
			invalid(w, "%q is a batch id; name the batch by its callback's job id (callback.id in the answer to POST /v1/batches)", v)
			return
		}
		invalid(w, "callback job id %q is not a positive integer", v)
		return
	}
	var req struct {
		Jobs []jobRequest `json:"jobs"`
	}
	if !a.decode(w, r, &req) {
		return
	}
	jobs, ok := batchJobs(w, req.Jobs)
	if !ok {
		return
	}
	res, err := a.client.AddToBatch(r.Context(), id, jobs...)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"jobs": insertResults(res)})
}

// batchJobs checks the jobs of a batch request, answering the error itself.
func batchJobs(w http.ResponseWriter, reqs []jobRequest) ([]rota.InsertManyParams, bool) {
	if len(reqs) == 0 || len(reqs) > batchMax {
		invalid(w, `"jobs" holds %d jobs; send 1 to %d`, len(reqs), batchMax)
		return nil, false
	}
	out := make([]rota.InsertManyParams, len(reqs))
	for i := range reqs {
		p, err := reqs[i].groupParams()
		if err != nil {
			invalid(w, "job %d of %d: %v", i+1, len(reqs), err)
			return nil, false
		}
		out[i] = p
	}
	return out, true
}

func insertResults(res []rota.InsertResult) []insertResult {
	out := make([]insertResult, len(res))
	for i, x := range res {
		out[i] = insertResult{Job: x.Job, Duplicate: x.Duplicate}
	}
	return out
}
