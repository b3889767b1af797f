package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/rotahq/rota/store"
)

func TestQueuesListPauseResume(t *testing.T) {
	e := newEnv(t)
	e.run("enqueue", "exec", "--queue", "mail", "--", "true").ok(t)
	e.run("enqueue", "exec", "--queue", "mail", "--", "true").ok(t)
	e.run("enqueue", "exec", "--queue", "reports", "--in", "1h", "--", "true").ok(t)

	out := e.run("queues", "list").ok(t).stdout
	for _, want := range []string{"QUEUE", "mail     active  2", "reports  active  0"} {
		if !strings.Contains(out, want) {
			t.Errorf("queues list does not show %q:\n%s", want, out)
		}
	}
	if out := e.run("queues", "pause", "mail").ok(t).stdout; out != "queue mail paused\n" {
		t.Fatalf("pause: %q", out)
	}
	var rows []queueRow
	e.run("-o", "json", "queues", "list").ok(t).decode(t, &rows)
	byName := map[string]queueRow{}
	for _, r := range rows {
		byName[r.Queue] = r
	}
	if !byName["mail"].Paused || byName["mail"].Counts[store.StateAvailable] != 2 || byName["mail"].OldestWait < 0 {
		t.Fatalf("mail after pause: %+v", byName["mail"])
	}
	if byName["reports"].Paused || byName["reports"].Counts[store.StateScheduled] != 1 {
		t.Fatalf("reports: %+v", byName["reports"])
	}
	e.run("queues", "resume", "mail").ok(t)
	e.run("-o", "json", "queues", "list").ok(t).decode(t, &rows)
	for _, r := range rows {
		if r.Paused {
			t.Fatalf("%s still paused after resume", r.Queue)
		}
	}
}

func TestStatusShowsNodesAndLeader(t *testing.T) {
	e := newEnv(t)
	if out := e.run("status").ok(t).stdout; !strings.Contains(out, "Leader: none") || !strings.Contains(out, "Nodes:  none") {
		t.Fatalf("status before any node:\n%s", out)
	}
	startServe(t, e, "--node-id", "node-one", "--drain-timeout", "1ms") // the sleep below is cut short at the end
	var view statusView
	// The node registers and takes the lease as it starts; wait for both, bounded.
	waitFor(t, func() bool {
		e.run("-o", "json", "status").ok(t).decode(t, &view)
		return view.Leader != nil && view.Leader.Held && len(view.Nodes) == 1
	})
	if view.Leader.Owner != "node-one" || view.Nodes[0].ID != "node-one" || view.Nodes[0].Queues[0] != "default" {
		t.Fatalf("status: %+v", view)
	}
	out := e.run("status").ok(t).stdout
	if !strings.Contains(out, "Leader: node-one (token 1") || !strings.Contains(out, "node-one  ") {
		t.Fatalf("status table:\n%s", out)
	}
	// Each node's running jobs are counted.
	e.run("enqueue", "exec", "--", "sleep", "60").ok(t)
	waitFor(t, func() bool {
		e.run("-o", "json", "status").ok(t).decode(t, &view)
		return len(view.Nodes) == 1 && view.Nodes[0].Running == 1
	})
	out = e.run("status").ok(t).stdout
	if !regexp.MustCompile(`(?m)^ID +HOST +PID +VERSION +QUEUES +RUNNING +UP +LAST SEEN\n\S+ +\S+ +\d+ +\S+ +default +1 +`).MatchString(out) {
		t.Fatalf("status table does not count the node's running job:\n%s", out)
	}
	// Work no node serves is named.
	e.run("enqueue", "exec", "--queue", "nightly", "--", "true").ok(t)
	if out := e.run("status").ok(t).stdout; !strings.Contains(out, "Warning: no live node serves queue nightly, with 1 job waiting") {
		t.Fatalf("status does not warn of the unserved queue:\n%s", out)
	}
}
