package dashboard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/internal/attempts"
	"github.com/rotahq/rota/internal/jsonenc"
	"github.com/rotahq/rota/store"
)

// parsePages parses each page together with the shared layout.
func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"ago":    ago,
		"stamp":  stamp,
		"pretty": pretty,
		// duration shows how long an attempt ran, "-" when the store did not say.
		"duration": attempts.Duration,
		// pathesc makes a name one path segment: queue and schedule names may hold "/" and ".".
		"pathesc":  url.PathEscape,
		"count":    func(c map[store.State]int64, s string) int64 { return c[store.State(s)] },
		"counts":   stateCounts,
		"status":   rota.WorkflowStatus,
		"ms":       ms,
		"partLink": partLink,
		// dict passes several values to a sub-template.
		"dict": func(kv ...any) map[string]any {
			m := map[string]any{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		},
		"lastError": func(errs []store.AttemptError) string {
			if len(errs) == 0 {
				return ""
			}
			return errs[len(errs)-1].Error
		},
	}
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, name := range names {
		page := strings.TrimSuffix(path.Base(name), ".html")
		if page == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", name)
		if err != nil {
			return nil, fmt.Errorf("dashboard: template %s: %w", name, err)
		}
		pages[page] = t
	}
	return pages, nil
}

// render writes a page with status. It renders into a buffer first, so a failing template
// shows an error instead of half a page.
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, page string, data map[string]any) {
	data["Page"] = page
	data["Nav"] = page != "login"
	data["SignOut"] = !d.noAuth && page != "login"
	var buf bytes.Buffer
	if err := d.pages[page].Execute(&buf, data); err != nil {
		d.logger.Error("rota: dashboard: rendering failed", "page", page, "error", err)
		http.Error(w, "rendering the page failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// fail shows an error page with the status the error deserves.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, rota.ErrInvalid):
		status = http.StatusBadRequest
	case errors.Is(err, store.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, store.ErrJobRunning):
		status = http.StatusConflict
	case errors.Is(err, store.ErrUnavailable):
		status = http.StatusServiceUnavailable
		d.logger.Warn("rota: dashboard: the store cannot take the request", "path", r.URL.Path, "error", err)
	default:
		d.logger.Error("rota: dashboard: request failed", "path", r.URL.Path, "error", err)
	}
	d.render(w, r, status, "error", map[string]any{"Status": status, "Error": err.Error()})
}

func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request) {
	// The overview is what an operator leaves open: it reloads itself.
	data := map[string]any{"States": stateNames, "Now": d.clock.Now(), "Refresh": overviewRefresh}
	if st, err := d.client.Status(r.Context()); err == nil {
		data["Status"], data["Queues"] = st, st.Queues // counted once, for the table and the warnings
	} else if !errors.Is(err, rota.ErrNoRegistry) {
		d.fail(w, r, err)
		return
	} else {
		queues, err := d.client.QueueStats(r.Context())
		if err != nil {
			d.fail(w, r, err)
			return
		}
		data["Queues"] = queues
	}
	// ?queue= and ?kind= narrow the chart and the tables to a part of the fleet; the tables'
	// names link to their part.
	part := rota.FleetFilter{Queue: r.URL.Query().Get("queue"), Kind: r.URL.Query().Get("kind")}
	switch fleet, err := d.client.FleetStats(r.Context(), fleetWindow, part); {
	case err == nil:
		data["Fleet"], data["Chart"], data["Part"] = fleet, layoutFleet(fleet.Minutes), fleetPart(part)
	case !errors.Is(err, rota.ErrNoStats):
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "overview", data)
}

// overviewRefresh is how often, in seconds, an open overview reloads.
const overviewRefresh = 10

// stateNames are the states wherever the dashboard lists them, in store.States' order, as the
// strings that query values compare with: a state the store adds shows up here.
var stateNames = func() []string {
	out := make([]string, len(store.States))
	for i, s := range store.States {
		out[i] = string(s)
	}
	return out
}()

// pageSize is how many jobs one page of the list shows.
const pageSize = 50

func (d *Dashboard) jobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p, err := jobFilter(q)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	before, after, err := pageCursors(q)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	jobs, before, after, err := d.jobsPage(r.Context(), p, before, after)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := map[string]any{"Jobs": jobs, "Filter": filterValues(q), "States": stateNames}
	// Older jobs follow a full page, and the page that newer ones were paged to; newer jobs
	// precede a page reached from newer ones.
	if len(jobs) > 0 && (len(jobs) == pageSize || after != 0) {
		older := filterQuery(q)
		older.Set("before", strconv.FormatInt(jobs[len(jobs)-1].ID, 10))
		data["Next"] = "/jobs?" + older.Encode()
	}
	if before != 0 || after != 0 {
		newer := filterQuery(q)
		if len(jobs) > 0 {
			newer.Set("after", strconv.FormatInt(jobs[0].ID, 10))
		}
		data["Newer"] = "/jobs?" + newer.Encode()
	}
	d.render(w, r, http.StatusOK, "jobs", data)
}

// jobsPage reads a page of the jobs page, newest first: the first page, the older jobs before
// the id before, or the newer ones after the id after, read oldest first from it (one more, to
// know whether still newer ones follow) and turned round. With no more than a page of newer
// jobs left, it is the first page, and both cursors come back 0.
func (d *Dashboard) jobsPage(ctx context.Context, p rota.ListParams, before, after int64) ([]*rota.JobRow, int64, int64, error) {
	p.Limit = pageSize
	switch {
	case after != 0:
		p.AfterID, p.Desc, p.Limit = after, false, pageSize+1
	case before != 0:
		p.AfterID = before // with Desc, the page after id in that order: older jobs
	}
	jobs, err := d.client.List(ctx, p)
	if err != nil || after == 0 {
		return jobs, before, after, err
	}
	if len(jobs) <= pageSize {
		p.AfterID, p.Desc, p.Limit = 0, true, pageSize
		jobs, err = d.client.List(ctx, p)
		return jobs, 0, 0, err
	}
	jobs = jobs[:pageSize]
	slices.Reverse(jobs)
	return jobs, before, after, nil
}

// pageCursors reads the jobs page's before and after ids; one of them at most.
func pageCursors(q url.Values) (before, after int64, err error) {
	for _, c := range []struct {
		key string
		id  *int64
	}{{"before", &before}, {"after", &after}} {
		v := q.Get(c.key)
		if v == "" {
			continue
		}
		if *c.id, err = strconv.ParseInt(v, 10, 64); err != nil || *c.id < 1 {
			return 0, 0, fmt.Errorf("%w: %s %q is not a job id", rota.ErrInvalid, c.key, v)
		}
	}
	if before != 0 && after != 0 {
		return 0, 0, fmt.Errorf("%w: before and after together: page one way at a time", rota.ErrInvalid)
	}
	return before, after, nil
}

// find opens the job whose id was typed in the jobs page's box.
func (d *Dashboard) find(w http.ResponseWriter, r *http.Request) {
	v := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(r.URL.Query().Get("id")), "#"))
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 1 {
		d.fail(w, r, fmt.Errorf("%w: %q is not a job id", rota.ErrInvalid, r.URL.Query().Get("id")))
		return
	}
	http.Redirect(w, r, "/jobs/"+strconv.FormatInt(id, 10), http.StatusSeeOther)
}

func (d *Dashboard) job(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		d.fail(w, r, fmt.Errorf("%w: job id %q", rota.ErrInvalid, r.PathValue("id")))
		return
	}
	job, err := d.client.Get(r.Context(), id)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := map[string]any{"Job": job, "Final": job.State.Final(), "Running": job.State == rota.StateRunning,
		"Waits": job.DependsOn, "Attempts": attempts.Of(job, d.clock.Now())}
	if len(job.DependsOn) > waitsMax {
		data["Waits"], data["WaitsMore"] = job.DependsOn[:waitsMax], len(job.DependsOn)-waitsMax
	}
	d.render(w, r, http.StatusOK, "job", data)
}

// waitsMax bounds the jobs a job's page links to as those it waits for: a batch's callback
// waits for every job of the batch, which its workflow's page lists.
const waitsMax = 100

func (d *Dashboard) cancelJob(w http.ResponseWriter, r *http.Request) { d.onJob(w, r, d.client.Cancel) }
func (d *Dashboard) retryJob(w http.ResponseWriter, r *http.Request)  { d.onJob(w, r, d.client.Retry) }

// onJob applies f to the route's job and shows the job again.
func (d *Dashboard) onJob(w http.ResponseWriter, r *http.Request, f func(context.Context, int64) (*rota.JobRow, error)) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		d.fail(w, r, fmt.Errorf("%w: job id %q", rota.ErrInvalid, r.PathValue("id")))
		return
	}
	if _, err := f(r.Context(), id); err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/jobs/"+strconv.FormatInt(id, 10), http.StatusSeeOther)
}

func (d *Dashboard) pauseQueue(w http.ResponseWriter, r *http.Request) {
	d.onName(w, r, d.client.PauseQueue, "/")
}

func (d *Dashboard) resumeQueue(w http.ResponseWriter, r *http.Request) {
	d.onName(w, r, d.client.ResumeQueue, "/")
}

func (d *Dashboard) pauseSchedule(w http.ResponseWriter, r *http.Request) {
	d.onName(w, r, d.client.PauseSchedule, scheduleBack(r))
}

func (d *Dashboard) resumeSchedule(w http.ResponseWriter, r *http.Request) {
	d.onName(w, r, d.client.ResumeSchedule, scheduleBack(r))
}

// onName applies f to the route's queue or schedule and goes back to the page it was on.
func (d *Dashboard) onName(w http.ResponseWriter, r *http.Request, f func(context.Context, string) error, back string) {
	if err := f(r.Context(), r.PathValue("name")); err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

func (d *Dashboard) schedules(w http.ResponseWriter, r *http.Request) {
	list, err := d.client.ListSchedules(r.Context())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "schedules", map[string]any{"Schedules": list})
}

// ago shows how long ago t was, to the second; "-" for the zero time.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		return "in " + (-d).String()
	}
	return d.String() + " ago"
}

// stamp shows a time to the second, in UTC; "-" for the zero time.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// pretty indents JSON for reading; what does not parse, or would grow too large, is shown as
// it is (jsonenc.Indent).
func pretty(b []byte) string { return jsonenc.Indent(b, "") }
