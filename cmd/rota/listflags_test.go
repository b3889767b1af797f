package main

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

// seedListJobs writes, straight to the env's store, jobs the CLI cannot make: tagged ones and
// the occurrences of a schedule. It returns the ids of the tagged job, the other one and the
// occurrence.
func seedListJobs(t *testing.T, e *env) (tagged, plain, planned int64) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, strings.TrimPrefix(e.store, "sqlite:"), sqlite.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, err := st.Insert(ctx, []store.InsertParams{
		{Kind: "report", Queue: "default", Args: []byte(`{"account":{"id":42,"name":"acme"}}`), MaxAttempts: 3, Tags: []string{"billing"}},
		{Kind: "report", Queue: "default", Args: []byte(`{"account":{"id":7}}`), MaxAttempts: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	sc := store.Schedule{Name: "nightly", Expr: "0 3 * * *", Zone: "UTC", Kind: "report", Queue: "default",
		Args: []byte(`{}`), MaxAttempts: 3, Missed: store.MissedSkip}
	if _, err := st.UpsertSchedule(ctx, sc); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	occ := store.InsertParams{Kind: "report", Queue: "default", Args: []byte(`{}`), MaxAttempts: 3, Schedule: "nightly", RunAt: now}
	if _, err := st.PlanSchedule(ctx, "nightly", time.Time{}, now, []store.InsertParams{occ}); err != nil {
		t.Fatal(err)
	}
	return res[0].Job.ID, res[1].Job.ID, 3
}

func TestJobsListFilters(t *testing.T) {
	e := newEnv(t)
	tagged, plain, planned := seedListJobs(t, e)
	list := func(args ...string) []int64 {
		t.Helper()
		var rows []rota.JobRow
		e.run(append([]string{"-o", "json", "jobs", "list"}, args...)...).ok(t).decode(t, &rows)
		out := []int64{}
		for _, r := range rows {
			out = append(out, r.ID)
		}
		return out
	}
	for _, c := range []struct {
		args []string
		want []int64
	}{
		{[]string{"--tag", "billing"}, []int64{tagged}},
		{[]string{"--schedule", "nightly"}, []int64{planned}},
		{[]string{"--args-contains", "acme"}, []int64{tagged}},
		{[]string{"--args-path", "account.id=7"}, []int64{plain}},
		{[]string{"--args-path", `account.name="acme"`, "--tag", "billing"}, []int64{tagged}},
		{[]string{"--created-after", "1h"}, []int64{planned, plain, tagged}},
		{[]string{"--created-before", "1h"}, []int64{}},
		{[]string{"--created-after", "2000-01-01T00:00:00Z", "--created-before", "2100-01-01T00:00:00Z", "--order", "oldest"}, []int64{tagged, plain, planned}},
	} {
		if got := list(c.args...); !slices.Equal(got, c.want) {
			t.Errorf("jobs list %v = %v, want %v", c.args, got, c.want)
		}
	}
}

func TestJobsListFilterBadInput(t *testing.T) {
	e := newEnv(t)
	e.run("jobs", "list", "--args-path", "account..id=1").fails(t, `--args-path "account..id=1"`)
	e.run("jobs", "list", "--args-path", "account.id").fails(t, "use PATH=VALUE")
	e.run("jobs", "list", "--args-path", "account.name=acme").fails(t, "is not JSON")
	e.run("jobs", "list", "--created-after", "yesterday").fails(t, `--created-after "yesterday": use an RFC 3339 time`)
	e.run("jobs", "list", "--created-after", "1h", "--created-before", "2h").fails(t, "is later than created before")
}
