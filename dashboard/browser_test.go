package dashboard

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/internal/browsertest"
)

// An operator in a real browser: signs in, follows the link they were sent, reads a failed
// job's error, runs, cancels and retries a job, pauses a queue, sees the node's attempts on
// the chart, and signs out.
func TestInABrowser(t *testing.T) {
	s := newSite(t) // before the browser, so the browser closes first
	ctx := browsertest.Context(t)
	bg := context.Background()

	if _, err := s.client.Insert(bg, okArgs{}, nil); err != nil {
		t.Fatal(err)
	}
	s.await(t, rota.EventJobCompleted)
	failed, err := s.client.Insert(bg, boomArgs{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.await(t, rota.EventJobFailed)
	s.awaitStats(t)
	// A job on a queue no node serves stays where the dashboard puts it.
	parked, err := s.client.Insert(bg, okArgs{}, &rota.InsertOpts{Queue: "parked", RunAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}

	// Signed out, a link to a job leads to the sign-in form, and from there to the job.
	step(t, ctx, "open a job's link signed out",
		chromedp.Navigate(s.url+"/jobs/"+itoa(failed.Job.ID)), chromedp.WaitVisible(chromedp.ID("token")))
	step(t, ctx, "sign in with a wrong token",
		chromedp.SendKeys(chromedp.ID("token"), "nope"), chromedp.Click(chromedp.ID("sign-in")),
		chromedp.WaitVisible(chromedp.CSS("p.error")))
	step(t, ctx, "sign in",
		chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Click(chromedp.ID("sign-in")),
		chromedp.WaitVisible(chromedp.CSS("#job-state.retryable")))
	if errs := text(t, ctx, chromedp.ID("attempts")); !strings.Contains(errs, "node-1") || !strings.Contains(errs, "disk on fire") {
		t.Fatalf("the failed job's attempts read %q", errs)
	}

	job := s.url + "/jobs/" + itoa(parked.Job.ID)
	step(t, ctx, "open the parked job",
		chromedp.Navigate(job), chromedp.WaitVisible(chromedp.CSS("#job-state.scheduled")))
	step(t, ctx, "run it now",
		chromedp.Click(chromedp.ID("retry")), chromedp.WaitVisible(chromedp.CSS("#job-state.available")))
	step(t, ctx, "cancel it",
		chromedp.Click(chromedp.ID("cancel")), chromedp.WaitVisible(chromedp.CSS("#job-state.cancelled")))
	step(t, ctx, "retry it",
		chromedp.Click(chromedp.ID("retry")), chromedp.WaitVisible(chromedp.CSS("#job-state.available")))
	if j, err := s.client.Get(bg, parked.Job.ID); err != nil || j.State != rota.StateAvailable || j.Attempt != 0 {
		t.Fatalf("the parked job in the store: %+v, %v", j, err)
	}

	step(t, ctx, "list the retryable jobs",
		chromedp.Navigate(s.url+"/jobs?state=retryable"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-id="`+itoa(failed.Job.ID)+`"]`)))
	// Bulk: select the failed job, cancel the selection, confirm the count the page asks about.
	step(t, ctx, "select the failed job and cancel the selection",
		chromedp.Click(chromedp.CSS(`#jobs tr[data-id="`+itoa(failed.Job.ID)+`"] input[type=checkbox]`)),
		chromedp.Click(chromedp.ID("cancel-selected")), chromedp.WaitVisible(chromedp.ID("bulk-question")))
	if q := text(t, ctx, chromedp.ID("bulk-question")); q != "Cancel 1 job: the selected ones?" {
		t.Fatalf("the confirmation asks %q", q)
	}
	step(t, ctx, "confirm", chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(chromedp.ID("bulk-result")))
	if r := text(t, ctx, chromedp.ID("bulk-result")); r != "Cancel: 1 of 1 jobs." {
		t.Fatalf("the bulk result reads %q", r)
	}
	if j, err := s.client.Get(bg, failed.Job.ID); err != nil || j.State != rota.StateCancelled {
		t.Fatalf("the failed job after the bulk cancel: %+v, %v", j, err)
	}

	step(t, ctx, "open the queues",
		chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.CSS(`#queues tr[data-queue="default"]`)))
	// The fleet's chart has a bar for the completed attempt and one for the failed one; the
	// table by kind counts the failed attempt of kind boom.
	step(t, ctx, "read the chart",
		chromedp.WaitReady(chromedp.CSS("#throughput rect.completed")), chromedp.WaitReady(chromedp.CSS("#throughput rect.failed")))
	if row := text(t, ctx, chromedp.CSS(`#by-kind tr[data-name="boom"]`)); !strings.HasPrefix(strings.Join(strings.Fields(row), " "), "boom 0 1 0 0") {
		t.Fatalf("the table by kind reads %q for boom", row)
	}
	step(t, ctx, "pause the default queue",
		chromedp.Click(chromedp.CSS(`#queues tr[data-queue="default"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`#queues tr.paused[data-queue="default"]`)))
	stats, err := s.client.QueueStats(bg)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range stats {
		if q.Queue == "default" && !q.Paused {
			t.Fatal("the store has the default queue running after Pause")
		}
	}
	// Signing out ends the session: the pages ask to sign in again.
	step(t, ctx, "sign out",
		chromedp.Click(chromedp.CSS("form.logout button")), chromedp.WaitVisible(chromedp.ID("token")))
	step(t, ctx, "open the queues signed out",
		chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.ID("token")))
}

// step runs one user action in the browser, bounded so that a page that never comes names the
// step that waited for it.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		t.Fatalf("%s: %v (at %s)", what, err, loc)
	}
}

func text[S chromedp.Selectable](t *testing.T, ctx context.Context, sel S) string {
	t.Helper()
	got, err := chromedp.Run(ctx, chromedp.Text(sel))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// An operator follows a workflow in a real browser: finds it in the list, reads its graph (a
// box per step, coloured by state, each a link to its job), goes from a step's job to the jobs
// it waits for and back to the workflow, retries the failed steps and cancels the rest.
func TestWorkflowInABrowser(t *testing.T) {
	s := newSite(t)
	ctx := browsertest.Context(t)
	bg := context.Background()

	once := &rota.InsertOpts{MaxAttempts: 1}
	wf := rota.NewWorkflow()
	wf.Add("a", okArgs{}, nil)
	wf.Add("b", okArgs{}, nil).After("a")
	wf.Add("c", boomArgs{}, once).After("a")
	wf.Add("d", okArgs{}, nil).After("b", "c")
	res, err := s.client.InsertWorkflow(bg, wf)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int64{}
	for name, j := range res.Steps {
		ids[name] = j.ID
	}
	waitCtx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	if d, err := s.client.Wait(waitCtx, ids["d"]); d == nil || d.State != rota.StateCancelled {
		t.Fatalf("d ended %+v, %v; want cancelled after c was discarded", d, err)
	}
	// Nothing runs the steps a retry makes available, so the page shows them waiting.
	if err := s.client.PauseQueue(bg, "default"); err != nil {
		t.Fatal(err)
	}

	page := s.url + "/workflows/" + res.ID
	step(t, ctx, "open the workflow's link and sign in",
		chromedp.Navigate(page), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Click(chromedp.ID("sign-in")),
		chromedp.WaitVisible(chromedp.CSS("#workflow-status.failed")))
	boxes := func(what string, states map[string]rota.State) {
		t.Helper()
		for name, state := range states {
			step(t, ctx, what+": the box of "+name+" is "+string(state),
				chromedp.WaitReady(chromedp.CSS(`#graph a.node[data-step="`+name+`"][href="/jobs/`+itoa(ids[name])+`"] rect.box.`+string(state))))
		}
	}
	boxes("failed", map[string]rota.State{"a": rota.StateCompleted, "b": rota.StateCompleted, "c": rota.StateDiscarded, "d": rota.StateCancelled})
	for sel, want := range map[string]int{"#graph a.node": 4, "#graph path.edge": 4, "#steps tbody tr": 4} {
		if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('`+sel+`').length`)); err != nil || n != want {
			t.Fatalf("%d of %s, %v; want %d", n, sel, err, want)
		}
	}
	// The style sheet applies: a completed box and a discarded one are filled differently.
	fills, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`["a", "c"].map(n => getComputedStyle(document.querySelector('#graph a.node[data-step="' + n + '"] rect')).fill)`))
	if err != nil || len(fills) != 2 || fills[0] == fills[1] || fills[0] == "" {
		t.Fatalf("fills of a completed and a discarded box: %v, %v", fills, err)
	}

	step(t, ctx, "find the workflow in the list",
		chromedp.Click(chromedp.CSS(`header nav a[href="/workflows"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#workflows tr[data-id="`+res.ID+`"]`)))
	if got := text(t, ctx, chromedp.CSS(`#workflows tr[data-id="`+res.ID+`"] td.counts`)); got != "2 completed 1 cancelled 1 discarded" {
		t.Errorf("the list counts %q", got)
	}
	step(t, ctx, "open it from the list",
		chromedp.Click(chromedp.CSS(`#workflows tr[data-id="`+res.ID+`"] a`)), chromedp.WaitVisible(chromedp.ID("graph")))
	step(t, ctx, "open d from its box",
		chromedp.Click(chromedp.CSS(`#graph a.node[data-step="d"] rect`)), chromedp.WaitVisible(chromedp.CSS("#job-state.cancelled")))
	if got := text(t, ctx, chromedp.ID("job-step")); got != "d" {
		t.Errorf("d's page names step %q", got)
	}
	if got, want := text(t, ctx, chromedp.ID("job-waits")), itoa(ids["b"])+", "+itoa(ids["c"]); got != want {
		t.Errorf("d's page says it waits for %q, want %q", got, want)
	}
	step(t, ctx, "open c, which d waits for",
		chromedp.Click(chromedp.CSS(`#job-waits a[href="/jobs/`+itoa(ids["c"])+`"]`)), chromedp.WaitVisible(chromedp.CSS("#job-state.discarded")))
	step(t, ctx, "back to the workflow from c",
		chromedp.Click(chromedp.ID("job-workflow")), chromedp.WaitVisible(chromedp.CSS("#workflow-status.failed")))

	step(t, ctx, "retry the failed steps",
		chromedp.Click(chromedp.ID("retry")), chromedp.WaitVisible(chromedp.CSS("#workflow-status.running")))
	boxes("retried", map[string]rota.State{"a": rota.StateCompleted, "c": rota.StateAvailable, "d": rota.StatePending})
	if c, err := s.client.Get(bg, ids["c"]); err != nil || c.State != rota.StateAvailable {
		t.Fatalf("c in the store after the retry: %+v, %v", c, err)
	}
	step(t, ctx, "cancel the rest",
		chromedp.Click(chromedp.ID("cancel")), chromedp.WaitVisible(chromedp.CSS("#workflow-status.cancelled")))
	boxes("cancelled", map[string]rota.State{"b": rota.StateCompleted, "c": rota.StateCancelled, "d": rota.StateCancelled})
	if d, err := s.client.Get(bg, ids["d"]); err != nil || d.State != rota.StateCancelled {
		t.Fatalf("d in the store after the cancel: %+v, %v", d, err)
	}
}
