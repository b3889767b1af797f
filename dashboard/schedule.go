package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/rotahq/rota"
)

// occurrencesMax is how many of a schedule's latest occurrences its page lists: the recent
// history an operator checks, not the schedule's whole past.
const occurrencesMax = 25

// schedulePath is the page of schedule name.
func schedulePath(name string) string { return "/schedules/" + url.PathEscape(name) }

// schedule shows one schedule: its timing, next runs and latest occurrences, with its actions.
func (d *Dashboard) schedule(w http.ResponseWriter, r *http.Request) {
	d.showSchedule(w, r, http.StatusOK, nil)
}

// showSchedule renders the schedule page with status; edit, when set, is a refused edit to show
// again with its error.
func (d *Dashboard) showSchedule(w http.ResponseWriter, r *http.Request, status int, edit map[string]string) {
	name := r.PathValue("name")
	sc, err := d.client.GetSchedule(r.Context(), name)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	jobs, err := d.client.List(r.Context(), rota.ListParams{Schedule: name, Desc: true, Limit: occurrencesMax})
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if edit == nil {
		edit = map[string]string{"expr": sc.Expr, "zone": sc.Zone}
	}
	data := map[string]any{"Schedule": sc, "Jobs": jobs, "Edit": edit}
	if len(jobs) == occurrencesMax {
		data["More"] = "/jobs?" + url.Values{"schedule": {name}}.Encode()
	}
	d.render(w, r, status, "schedule", data)
}

// runSchedule enqueues the schedule's job now, outside its timing: a plain job of its kind, args
// and options. It is not one of the schedule's occurrences (the planner owns those and
// PlanSchedule alone marks them), so it does not move the schedule's next run.
func (d *Dashboard) runSchedule(w http.ResponseWriter, r *http.Request) {
	sc, err := d.client.GetSchedule(r.Context(), r.PathValue("name"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	res, err := d.client.Insert(r.Context(), rota.RawArgs{KindName: sc.Kind, JSON: sc.Args},
		&rota.InsertOpts{Queue: sc.Queue, Priority: sc.Priority, MaxAttempts: sc.MaxAttempts, Tags: sc.Tags})
	if err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/jobs/"+strconv.FormatInt(res.Job.ID, 10), http.StatusSeeOther)
}

// editSchedule changes a schedule's expression and zone, keeping its job and policy. A
// refused expression or zone shows the page again with the library's reason.
func (d *Dashboard) editSchedule(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	sc, err := d.client.GetSchedule(r.Context(), name)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	expr, zone := r.PostFormValue("expr"), r.PostFormValue("zone")
	_, err = d.client.UpsertSchedule(r.Context(), rota.Schedule{
		Name: name, Expr: expr, Zone: zone, Args: rota.RawArgs{KindName: sc.Kind, JSON: sc.Args},
		Opts:   &rota.InsertOpts{Queue: sc.Queue, Priority: sc.Priority, MaxAttempts: sc.MaxAttempts, Tags: sc.Tags},
		Missed: sc.Missed,
	})
	if errors.Is(err, rota.ErrInvalid) {
		d.showSchedule(w, r, http.StatusBadRequest, map[string]string{"expr": expr, "zone": zone, "error": err.Error()})
		return
	}
	if err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, schedulePath(name), http.StatusSeeOther)
}

// removeSchedule asks first, then removes the schedule (which cancels its occurrences that have
// not started) once the confirmation page's form is posted.
func (d *Dashboard) removeSchedule(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if r.PostFormValue("confirm") == "" {
		if _, err := d.client.GetSchedule(r.Context(), name); err != nil {
			d.fail(w, r, err)
			return
		}
		d.render(w, r, http.StatusOK, "scheduleremove", map[string]any{"Name": name, "Back": schedulePath(name)})
		return
	}
	if err := d.client.DeleteSchedule(r.Context(), name); err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/schedules", http.StatusSeeOther)
}

// scheduleBack is where pausing or resuming a schedule returns to: its own page when the form
// came from there, the list otherwise.
func scheduleBack(r *http.Request) string {
	if r.PostFormValue("from") == "schedule" {
		return schedulePath(r.PathValue("name"))
	}
	return "/schedules"
}
