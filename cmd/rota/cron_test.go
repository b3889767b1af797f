package main

import (
	"strings"
	"testing"

	"github.com/rotahq/rota"
)

func TestCronAddListShowPauseRemove(t *testing.T) {
	e := newEnv(t)
	out := e.run("cron", "add", "nightly", "30 2 * * *", "exec", "--zone", "Europe/Berlin", "--", "echo", "backup").ok(t).stdout
	if !strings.Contains(out, "schedule nightly added: 30 2 * * * (Europe/Berlin), next at") {
		t.Fatalf("add: %q", out)
	}
	e.run("cron", "add", "ping", "@every 5m", "http", "--args", `{"url":"http://127.0.0.1:1/health"}`, "--missed", "skip").ok(t)

	list := e.run("cron", "list")
	list.ok(t)
	for _, want := range []string{"NAME", "nightly  30 2 * * *", "Europe/Berlin", "ping     @every 5m", "skip"} {
		if !strings.Contains(list.stdout, want) {
			t.Errorf("list does not show %q:\n%s", want, list.stdout)
		}
	}
	if !strings.Contains(list.stderr, "no running node runs exec jobs") {
		t.Errorf("list does not warn that no node serves the schedules' queue:\n%s", list.stderr)
	}
	// Once a node that runs exec and http registers, only the schedule of a kind it lacks is flagged.
	e.run("cron", "add", "monthly-report", "@monthly", "report", "--args", `{}`).ok(t)
	startServe(t, e, "--node-id", "cron-node")
	waitFor(t, func() bool {
		r := e.run("cron", "list")
		return r.code == 0 && !strings.Contains(r.stderr, "schedule nightly") && !strings.Contains(r.stderr, "schedule ping")
	})
	if r := e.run("cron", "list"); !strings.Contains(r.stderr, "schedule monthly-report enqueues report jobs") {
		t.Fatalf("no warning for the kind no node runs:\n%s", r.stderr)
	}
	e.run("cron", "remove", "monthly-report").ok(t)
	var rows []rota.ScheduleRow
	e.run("-o", "json", "cron", "list").ok(t).decode(t, &rows)
	if len(rows) != 2 || len(rows[0].Next) != 3 || !rows[0].Next[0].Before(rows[0].Next[1]) {
		t.Fatalf("json list: %+v", rows)
	}

	e.run("cron", "pause", "nightly").ok(t)
	if show := e.run("cron", "show", "nightly").ok(t).stdout; !strings.Contains(show, "Paused:        true") || !strings.Contains(show, `"program": "echo"`) {
		t.Fatalf("show after pause:\n%s", show)
	}
	e.run("cron", "resume", "nightly").ok(t)
	if out := e.run("cron", "add", "nightly", "0 3 * * *", "exec", "--", "echo", "later").ok(t).stdout; !strings.Contains(out, "replaced") {
		t.Fatalf("re-add: %q", out)
	}
	e.run("cron", "remove", "nightly").ok(t)
	e.run("cron", "show", "nightly").fails(t, `no schedule named "nightly"`)
	e.run("cron", "remove", "nightly").fails(t, `no schedule named "nightly"`)
}

func TestCronRejectsBadSchedules(t *testing.T) {
	e := newEnv(t)
	e.run("cron", "add", "bad", "61 * * * *", "exec", "--", "true").fails(t, "minute field")
	e.run("cron", "add", "bad", "* * * * *", "exec", "--zone", "Mars/Olympus", "--", "true").fails(t, "Mars/Olympus")
	e.run("cron", "add", "bad", "@every -5s", "exec", "--", "true").fails(t, "@every")
	e.run("cron", "add", "bad", "* * * * *", "exec", "--missed", "sometimes", "--", "true").fails(t, `missed policy "sometimes"`)
	e.run("cron", "add", "bad name", "* * * * *", "exec", "--", "true").fails(t, "schedule name")
	if out := e.run("cron", "list").ok(t).stdout; out != "no schedules\n" {
		t.Fatalf("rejected schedules were stored:\n%s", out)
	}
}

// --tz is accepted beside --zone, as crontab users write CRON_TZ; two different zones are an
// error.
func TestCronTakesTZBesideZone(t *testing.T) {
	e := newEnv(t)
	e.run("cron", "add", "berlin", "30 2 * * *", "exec", "--tz", "Europe/Berlin", "--", "true").ok(t)
	var s struct {
		Zone string `json:"zone"`
	}
	e.run("-o", "json", "cron", "show", "berlin").ok(t).decode(t, &s)
	if s.Zone != "Europe/Berlin" {
		t.Fatalf("zone %q, want Europe/Berlin", s.Zone)
	}
	e.run("cron", "add", "x", "30 2 * * *", "exec", "--tz", "Europe/Berlin", "--zone", "Asia/Tokyo", "--", "true").fails(t, "name two zones")
	e.run("cron", "add", "y", "30 2 * * *", "exec", "--tz", "Europe/Berlin", "--zone", "Europe/Berlin", "--", "true").ok(t)
}

// With -o json, pausing, resuming and removing a schedule print JSON, as every other command does.
func TestCronChangesPrintJSON(t *testing.T) {
	e := newEnv(t)
	e.run("cron", "add", "nightly", "@daily", "exec", "--", "true").ok(t)
	for _, args := range [][]string{{"pause", "nightly"}, {"resume", "nightly"}, {"remove", "nightly"}} {
		r := e.run(append([]string{"-o", "json", "cron"}, args...)...).ok(t)
		var v map[string]any
		r.decode(t, &v)
	}
}
