package httpapi

import (
	"fmt"
	"net/url"
	"time"

	"github.com/rotahq/rota"
)

// listFilters reads GET /v1/jobs's tag, schedule, owner, args and created filters into p and checks
// the whole filter, so that a malformed one is a 400 naming the parameter.
func listFilters(q url.Values, p *rota.ListParams) error {
	p.Tag, p.Schedule, p.Owner = q.Get("tag"), q.Get("schedule"), q.Get("owner")
	p.ArgsContains = q.Get("args_contains")
	p.ArgsPath, p.ArgsValue = q.Get("args_path"), q.Get("args_value")
	var err error
	if p.CreatedAfter, err = queryTime(q, "created_after"); err != nil {
		return err
	}
	if p.CreatedBefore, err = queryTime(q, "created_before"); err != nil {
		return err
	}
	return p.Check()
}

func queryTime(q url.Values, name string) (time.Time, error) {
	v := q.Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q is not an RFC 3339 time", name, v)
	}
	return t, nil
}
