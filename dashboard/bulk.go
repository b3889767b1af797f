package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store"
)

// bulkMax bounds the jobs one bulk action takes: a page of the filter's matches at a time, so a
// click cannot start an action over millions of jobs (run it again for the rest).
const bulkMax = 10000

// bulkVerbs are the bulk actions, by the name the form sends (with "-all" for every job that
// matches the filter instead of the selected ones).
var bulkVerbs = map[string]string{"retry": "Retry", "cancel": "Cancel", "delete": "Delete"}

// skipped is a job a bulk action left as it was, and why.
type skipped struct {
	ID     int64
	Reason string
}

// bulk asks how many jobs an action will touch, then, once confirmed with that count, applies
// it to each and says what it did. The selected jobs are the checked ones; "all" re-reads the
// filter's matches when confirmed, so the count confirmed is of jobs that matched then.
func (d *Dashboard) bulk(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		d.fail(w, r, fmt.Errorf("%w: %v", rota.ErrInvalid, err))
		return
	}
	f := r.PostForm
	action, scope := f.Get("action"), f.Get("scope")
	if a, ok := strings.CutSuffix(action, "-all"); ok {
		action, scope = a, "all"
	}
	verb, ok := bulkVerbs[action]
	if !ok {
		d.fail(w, r, fmt.Errorf("%w: bulk action %q", rota.ErrInvalid, f.Get("action")))
		return
	}
	filter, err := jobFilter(f)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	back := "/jobs"
	if q := filterQuery(f).Encode(); q != "" {
		back += "?" + q
	}
	var ids []int64
	capped := false
	what := "the selected ones"
	if scope == "all" {
		if ids, capped, err = d.matching(r.Context(), filter); err != nil {
			d.fail(w, r, err)
			return
		}
		what = describeFilter(f)
	} else {
		for _, v := range f["id"] {
			id, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				d.fail(w, r, fmt.Errorf("%w: job id %q", rota.ErrInvalid, v))
				return
			}
			ids = append(ids, id)
		}
	}
	data := map[string]any{"Verb": verb, "Action": action, "Scope": scope, "Count": len(ids), "What": what,
		"Capped": capped, "Filter": filterValues(f), "Back": back}
	if scope != "all" {
		data["IDs"] = ids
	}
	if f.Get("confirm") == "" || len(ids) == 0 {
		d.render(w, r, http.StatusOK, "bulk", data)
		return
	}
	var skips []skipped
	applied := 0
	for _, id := range ids {
		if err := d.apply(r.Context(), action, id); err != nil {
			if !isRefusal(err) {
				d.fail(w, r, err) // the store failed: stop, and say so
				return
			}
			skips = append(skips, skipped{ID: id, Reason: refusalText(err)})
			continue
		}
		applied++
	}
	data["Done"], data["Applied"], data["Skipped"] = true, applied, skips
	d.render(w, r, http.StatusOK, "bulk", data)
}

// apply runs one bulk action on job id.
func (d *Dashboard) apply(ctx context.Context, action string, id int64) error {
	switch action {
	case "retry":
		_, err := d.client.Retry(ctx, id)
		return err
	case "cancel":
		_, err := d.client.Cancel(ctx, id)
		return err
	}
	return d.client.Delete(ctx, id)
}

// isRefusal tells an action the job's state refused (running, gone) from a store that failed.
func isRefusal(err error) bool {
	return errors.Is(err, store.ErrJobRunning) || errors.Is(err, store.ErrNotFound) || errors.Is(err, rota.ErrInvalid)
}

// refusalText is why a job was left: the error without the "rota: action job N:" the page
// already says.
func refusalText(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}

// matching lists the ids of the jobs filter matches, newest first, at most bulkMax.
func (d *Dashboard) matching(ctx context.Context, filter rota.ListParams) (ids []int64, capped bool, err error) {
	filter.Limit = 1000
	for {
		page, err := d.client.List(ctx, filter)
		if err != nil {
			return nil, false, err
		}
		for _, j := range page {
			if len(ids) == bulkMax {
				return ids, true, nil
			}
			ids = append(ids, j.ID)
		}
		if len(page) < filter.Limit {
			return ids, false, nil
		}
		filter.AfterID = page[len(page)-1].ID
	}
}
