package dashboard

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store"
)

// A job's page lists its attempts: the node that ran each, and how the last one goes or went.
// The job is on a queue no node serves, and the test claims and ends it as two nodes would.
func TestJobPageShowsAttempts(t *testing.T) {
	s := newSite(t)
	c := browser(t)
	post(t, c, s.url+"/login", url.Values{"token": {token}}, "")
	ctx := context.Background()
	res, err := s.client.Insert(ctx, okArgs{}, &rota.InsertOpts{Queue: "manual"})
	if err != nil {
		t.Fatal(err)
	}
	id, st := res.Job.ID, s.client.Store()
	claim := func(owner string) *store.JobRow {
		t.Helper()
		got, err := st.Claim(ctx, store.ClaimParams{Queue: "manual", Kinds: []string{"ok"}, Max: 1, Owner: owner, LeaseFor: time.Minute})
		if err != nil || len(got) != 1 {
			t.Fatalf("claim as %s: %v, %v", owner, got, err)
		}
		return got[0]
	}
	end := func(j *store.JobRow, o store.Outcome) {
		t.Helper()
		o.ID, o.Fence = j.ID, j.Fence
		if applied, err := st.Complete(ctx, []store.Outcome{o}); err != nil || !applied[0] {
			t.Fatalf("complete %+v: %v, %v", o, applied, err)
		}
	}
	page := func() string {
		t.Helper()
		_, _, body := get(t, c, s.url+"/jobs/"+itoa(id))
		return body
	}

	// A failed program's attempt keeps the end of its stdout and of its stderr (builtin exec).
	end(claim("node-x"), store.Outcome{State: store.StateRetryable, Error: &store.AttemptError{Error: "first try failed",
		Trace: "stdout:\nOUT-TEXT\n\nstderr:\nERR-TEXT"}})
	running := claim("node-y")
	body := page()
	for _, want := range []string{`<td class="node">node-x</td>`, "first try failed", "running on node-y for",
		`<summary>details: stack or program output</summary><pre>stdout:` + "\nOUT-TEXT\n\nstderr:\nERR-TEXT</pre>"} {
		if !strings.Contains(body, want) {
			t.Errorf("running job's page lacks %q:\n%s", want, body)
		}
	}
	end(running, store.Outcome{State: store.StateCompleted})
	body = page()
	for _, want := range []string{`<td class="node">node-x</td>`, `<td class="node">node-y</td>`, `<td class="outcome">completed</td>`} {
		if !strings.Contains(body, want) {
			t.Errorf("completed job's page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "running on") {
		t.Errorf("completed job's page says it runs:\n%s", body)
	}
}
