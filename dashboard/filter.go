package dashboard

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/rotahq/rota"
)

// filterKeys are the jobs page's filter fields, in the order the page describes them. The jobs
// page, its paging links and the bulk actions read the same ones, so that "Cancel all" acts on
// exactly the jobs the page shows.
var filterKeys = []string{"state", "queue", "kind", "tag", "workflow", "schedule", "args", "args_path", "args_value",
	"owner", "created_after", "created_before"}

// filterLabels are how describeFilter names each field.
var filterLabels = map[string]string{
	"state": "state", "queue": "queue", "kind": "kind", "tag": "tag", "workflow": "workflow", "schedule": "schedule",
	"args": "args containing", "args_path": "args path", "args_value": "equal to", "owner": "running on",
	"created_after": "created from", "created_before": "created before",
}

// jobFilter reads the filter fields of a query or form into ListParams.
func jobFilter(v url.Values) (rota.ListParams, error) {
	p := rota.ListParams{Queue: v.Get("queue"), Kind: v.Get("kind"), Tag: v.Get("tag"), Workflow: v.Get("workflow"),
		Schedule: v.Get("schedule"), ArgsContains: v.Get("args"), ArgsPath: strings.TrimSpace(v.Get("args_path")),
		ArgsValue: strings.TrimSpace(v.Get("args_value")), Owner: v.Get("owner"), Desc: true}
	if s := v.Get("state"); s != "" {
		p.States = []rota.State{rota.State(s)}
	}
	var err error
	if p.CreatedAfter, err = formTime(v, "created_after"); err != nil {
		return p, err
	}
	if p.CreatedBefore, err = formTime(v, "created_before"); err != nil {
		return p, err
	}
	if err := p.Check(); err != nil {
		return p, fmt.Errorf("%w: %v", rota.ErrInvalid, err)
	}
	return p, nil
}

// formTimeLayouts are what a created bound may be written as: what a datetime-local input sends
// (read as UTC, the zone every time on the dashboard is shown in), a date, or RFC 3339.
var formTimeLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02", time.RFC3339}

func formTime(v url.Values, key string) (time.Time, error) {
	s := strings.TrimSpace(v.Get(key))
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range formTimeLayouts {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: %s %q: give a time such as 2025-06-01T09:00 (UTC)", rota.ErrInvalid, filterLabels[key], s)
}

// filterValues are the filter fields v sets, by key, for templates to put in links and forms.
func filterValues(v url.Values) map[string]string {
	out := make(map[string]string, len(filterKeys))
	for _, k := range filterKeys {
		out[k] = v.Get(k)
	}
	return out
}

func filterQuery(f url.Values) url.Values {
	q := url.Values{}
	for _, k := range filterKeys {
		if v := f.Get(k); v != "" {
			q.Set(k, v)
		}
	}
	return q
}

func describeFilter(f url.Values) string {
	var parts []string
	for _, k := range filterKeys {
		if v := f.Get(k); v != "" {
			parts = append(parts, filterLabels[k]+" "+v)
		}
	}
	if len(parts) == 0 {
		return "every job"
	}
	return "every job with " + strings.Join(parts, ", ")
}
