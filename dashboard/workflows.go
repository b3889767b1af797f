package dashboard

import (
	"context"
	"net/http"
	"net/url"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store"
)

// workflowRefresh is how often, in seconds, the page of a running workflow reloads: steps
// move on faster than queues do.
const workflowRefresh = 5

// stateCount is how many steps are in one state.
type stateCount struct {
	State store.State
	N     int64
}

// stateCounts lists the states that have steps, in the dashboard's order of states.
func stateCounts(counts map[store.State]int64) []stateCount {
	var out []stateCount
	for _, s := range store.States {
		if n := counts[s]; n > 0 {
			out = append(out, stateCount{s, n})
		}
	}
	return out
}

// failedSteps counts the steps RetryWorkflow would run again.
func failedSteps(counts map[store.State]int64) int64 {
	return counts[store.StateDiscarded] + counts[store.StateCancelled] + counts[store.StateExpired]
}

func (d *Dashboard) workflows(w http.ResponseWriter, r *http.Request) {
	before := r.URL.Query().Get("before")
	list, err := d.client.Workflows(r.Context(), rota.WorkflowListParams{Before: before, Limit: pageSize})
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := map[string]any{"Workflows": list}
	if len(list) == pageSize {
		data["Next"] = "/workflows?" + url.Values{"before": {list[len(list)-1].ID}}.Encode()
	}
	d.render(w, r, http.StatusOK, "workflows", data)
}

// waitFor is a job a step waits for; Step is empty for a job outside the workflow.
type waitFor struct {
	ID   int64
	Step string
}

// stepRow is one line of a workflow's table of steps.
type stepRow struct {
	Job   *rota.JobRow
	Waits []waitFor
}

func (d *Dashboard) workflow(w http.ResponseWriter, r *http.Request) {
	info, err := d.client.Workflow(r.Context(), r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "workflow", workflowPage(info))
}

// workflowPage is what the workflow page shows of info: the graph up to graphMax steps, and
// a reload while any step has not ended.
func workflowPage(info *rota.WorkflowInfo) map[string]any {
	names := make(map[int64]string, len(info.Steps))
	for _, s := range info.Steps {
		names[s.ID] = s.Step
	}
	rows := make([]stepRow, len(info.Steps))
	for i, s := range info.Steps {
		rows[i].Job = s
		for _, dep := range s.DependsOn {
			rows[i].Waits = append(rows[i].Waits, waitFor{ID: dep, Step: names[dep]})
		}
	}
	status := rota.WorkflowStatus(info.Counts)
	data := map[string]any{"Workflow": info, "Status": status, "Counts": stateCounts(info.Counts), "Rows": rows,
		"Running": status == "running", "Failed": failedSteps(info.Counts) > 0, "States": stateNames, "GraphMax": graphMax}
	if len(info.Steps) <= graphMax {
		data["Graph"] = layout(info.Steps)
	}
	if status == "running" {
		data["Refresh"] = workflowRefresh
	}
	return data
}

func (d *Dashboard) cancelWorkflow(w http.ResponseWriter, r *http.Request) {
	d.onWorkflow(w, r, d.client.CancelWorkflow)
}

func (d *Dashboard) retryWorkflow(w http.ResponseWriter, r *http.Request) {
	d.onWorkflow(w, r, d.client.RetryWorkflow)
}

// onWorkflow applies f to the route's workflow and shows the workflow again.
func (d *Dashboard) onWorkflow(w http.ResponseWriter, r *http.Request, f func(context.Context, string) ([]*rota.JobRow, error)) {
	id := r.PathValue("id")
	if _, err := f(r.Context(), id); err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/workflows/"+url.PathEscape(id), http.StatusSeeOther)
}
