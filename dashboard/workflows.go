package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

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

// waitFor is a job a step waits for; Step is empty for a job outside the workflow, or one of
// the workflow's steps the page does not hold (a page of a large workflow's table).
type waitFor struct {
	ID   int64
	Step string
}

// stepRow is one line of a workflow's table of steps: the first waitsShown jobs it waits for,
// and how many more.
type stepRow struct {
	Job   *rota.JobRow
	Waits []waitFor
	More  int
}

// A workflow's page reads and shows a bounded part of it however large it grows, reloading as
// it does every few seconds: a fan-in of ten thousand steps would otherwise be a page of
// megabytes, read whole from the store at each reload.
const (
	// stepsPageSize is how many steps a page of the table of a workflow of more than graphMax
	// steps shows; one of graphMax steps or fewer is shown whole, with its graph.
	stepsPageSize = 100
	// waitsShown is how many of the jobs a step waits for its row names; a fan-in's final step
	// would name every other step.
	waitsShown = 10
)

func (d *Dashboard) workflow(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	before, after, err := pageCursors(r.URL.Query())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	stats, err := d.client.Workflows(r.Context(), rota.WorkflowListParams{ID: id, Limit: 1})
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if len(stats) == 0 {
		d.fail(w, r, fmt.Errorf("workflow %s: %w", id, store.ErrNotFound))
		return
	}
	if stepTotal(stats[0].Counts) <= graphMax {
		// All of it, in one read: the counts are read already (Client.Workflow would read them
		// again).
		steps, err := d.client.List(r.Context(), rota.ListParams{Workflow: id, Limit: graphMax})
		if err != nil {
			d.fail(w, r, err)
			return
		}
		d.render(w, r, http.StatusOK, "workflow", workflowPage(stats[0], steps))
		return
	}
	steps, prev, next, err := d.stepsPage(r.Context(), id, before, after)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := workflowPage(stats[0], steps)
	page := "/workflows/" + url.PathEscape(id) + "?"
	if prev != 0 {
		data["Prev"] = page + url.Values{"before": {strconv.FormatInt(prev, 10)}}.Encode()
	}
	if next != 0 {
		data["Next"] = page + url.Values{"after": {strconv.FormatInt(next, 10)}}.Encode()
	}
	d.render(w, r, http.StatusOK, "workflow", data)
}

// stepsPage reads stepsPageSize steps of workflow id in id order: the first ones, those after
// the step after, or those before the step before. prev and next are the cursors of the pages
// around it (before the first step shown, after the last), 0 where there is none.
func (d *Dashboard) stepsPage(ctx context.Context, id string, before, after int64) (steps []*rota.JobRow, prev, next int64, err error) {
	p := rota.ListParams{Workflow: id, Limit: stepsPageSize + 1}
	if before != 0 {
		p.AfterID, p.Desc = before, true
	} else {
		p.AfterID = after
	}
	if steps, err = d.client.List(ctx, p); err != nil {
		return nil, 0, 0, err
	}
	more := len(steps) > stepsPageSize
	steps = steps[:min(len(steps), stepsPageSize)]
	if before != 0 {
		slices.Reverse(steps)
	}
	if len(steps) == 0 {
		return steps, 0, 0, nil
	}
	// Paging back, the step paged from follows; paging on, the step paged from precedes.
	if before != 0 || more {
		next = steps[len(steps)-1].ID
	}
	if after != 0 || (before != 0 && more) {
		prev = steps[0].ID
	}
	return steps, prev, next, nil
}

// stepTotal is how many steps counts counts.
func stepTotal(counts map[store.State]int64) int64 {
	var n int64
	for _, c := range counts {
		n += c
	}
	return n
}

// workflowPage is what the workflow page shows of the workflow stats and its steps (all of
// them, or a page): the graph when steps are all of at most graphMax steps with at most
// graphEdgesMax dependencies among them, and a reload while any step has not ended.
func workflowPage(stats store.WorkflowStats, steps []*rota.JobRow) map[string]any {
	names := make(map[int64]string, len(steps))
	edges := 0
	for _, s := range steps {
		names[s.ID] = s.Step
		edges += len(s.DependsOn)
	}
	rows := make([]stepRow, len(steps))
	for i, s := range steps {
		rows[i].Job = s
		for _, dep := range s.DependsOn[:min(len(s.DependsOn), waitsShown)] {
			rows[i].Waits = append(rows[i].Waits, waitFor{ID: dep, Step: names[dep]})
		}
		rows[i].More = max(0, len(s.DependsOn)-waitsShown)
	}
	total := stepTotal(stats.Counts)
	status := rota.WorkflowStatus(stats.Counts)
	data := map[string]any{"Workflow": stats, "Total": total, "Status": status, "Counts": stateCounts(stats.Counts), "Rows": rows,
		"Running": status == "running", "Failed": failedSteps(stats.Counts) > 0, "States": stateNames,
		"GraphMax": graphMax, "GraphEdgesMax": graphEdgesMax, "Edges": edges, "Paged": int64(len(steps)) < total}
	if total <= graphMax && int64(len(steps)) == total && edges <= graphEdgesMax {
		data["Graph"] = layout(steps)
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
