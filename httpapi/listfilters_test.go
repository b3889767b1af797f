package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

func TestListFilters(t *testing.T) {
	s := newServer(t)
	var a, b inserted
	s.call(t, "POST", "/v1/jobs", `{"kind":"greet","args":{"account":{"id":42,"name":"acme"}},"tags":["billing"]}`, &a)
	s.call(t, "POST", "/v1/jobs", `{"kind":"greet","args":{"account":{"id":7}}}`, &b)
	ctx := context.Background()
	st := s.client.Store()
	if _, err := st.UpsertSchedule(ctx, store.Schedule{Name: "nightly", Expr: "0 3 * * *", Zone: "UTC", Kind: "greet",
		Queue: "default", Args: []byte(`{}`), MaxAttempts: 3, Missed: store.MissedSkip}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	occ := store.InsertParams{Kind: "greet", Queue: "default", Args: []byte(`{}`), MaxAttempts: 3, Schedule: "nightly", RunAt: now}
	if _, err := st.PlanSchedule(ctx, "nightly", time.Time{}, now, []store.InsertParams{occ}); err != nil {
		t.Fatal(err)
	}
	planned := b.Job.ID + 1
	if got, err := st.Claim(ctx, store.ClaimParams{Queue: "default", Kinds: []string{"greet"}, Max: 1, Owner: "node-x", LeaseFor: time.Minute}); err != nil || len(got) != 1 || got[0].ID != a.Job.ID {
		t.Fatalf("claim: %v, %v", got, err)
	}
	hour := url.QueryEscape(now.Add(-time.Hour).Format(time.RFC3339))
	for q, want := range map[string][]int64{
		"tag=billing":                       {a.Job.ID},
		"schedule=nightly":                  {planned},
		"owner=node-x":                      {a.Job.ID},
		"args_contains=acme":                {a.Job.ID},
		"args_path=account.id&args_value=7": {b.Job.ID},
		"args_path=account.name&args_value=%22acme%22&tag=billing": {a.Job.ID},
		"created_after=" + hour:                        {planned, b.Job.ID, a.Job.ID},
		"created_before=" + hour:                       {},
		"created_after=" + hour + "&order=asc&limit=2": {a.Job.ID, b.Job.ID},
	} {
		var page struct {
			Jobs []struct {
				ID int64 `json:"id"`
			} `json:"jobs"`
		}
		if code := s.call(t, "GET", "/v1/jobs?"+q, "", &page); code != http.StatusOK {
			t.Fatalf("GET /v1/jobs?%s: %d", q, code)
		}
		got := []int64{}
		for _, j := range page.Jobs {
			got = append(got, j.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("GET /v1/jobs?%s = %v, want %v", q, got, want)
		}
	}
	s.wantError(t, "GET", "/v1/jobs?args_path=account..id&args_value=1", "", 400, "invalid", "empty segment")
	s.wantError(t, "GET", "/v1/jobs?args_path=account.id", "", 400, "invalid", "needs a value")
	s.wantError(t, "GET", "/v1/jobs?args_path=account.name&args_value=acme", "", 400, "invalid", "not JSON")
	s.wantError(t, "GET", "/v1/jobs?created_after=yesterday", "", 400, "invalid", "created_after")
	s.wantError(t, "GET", "/v1/jobs?created_after=2030-01-02T00:00:00Z&created_before=2030-01-01T00:00:00Z", "", 400, "invalid", "later than")
}
