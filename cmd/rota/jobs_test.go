package main

import (
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store"
)

func TestJobsListShowCancelRetry(t *testing.T) {
	e := newEnv(t)
	e.run("enqueue", "exec", "--in", "1h", "--", "echo", "one").ok(t)
	e.run("enqueue", "report", "--queue", "reports", "--args", `{"month":"2025-01"}`).ok(t)
	e.run("enqueue", "exec", "--", "echo", "three").ok(t)

	list := e.run("jobs", "list").ok(t).stdout
	for _, want := range []string{"ID", "STATE", "1   scheduled  exec", "2   available  report  reports", "3   available  exec"} {
		if !strings.Contains(list, want) {
			t.Errorf("list does not show %q:\n%s", want, list)
		}
	}
	var rows []rota.JobRow
	e.run("-o", "json", "jobs", "list", "--kind", "exec", "--state", "available,scheduled").ok(t).decode(t, &rows)
	if len(rows) != 2 || rows[0].ID != 3 || rows[1].ID != 1 {
		t.Fatalf("exec jobs, newest first = %+v", rows)
	}
	e.run("-o", "json", "jobs", "list", "--kind", "exec", "--order", "oldest").ok(t).decode(t, &rows)
	if len(rows) != 2 || rows[0].ID != 1 || rows[1].ID != 3 {
		t.Fatalf("exec jobs, oldest first = %+v", rows)
	}
	e.run("jobs", "list", "--order", "sideways").fails(t, `--order "sideways": newest or oldest`)
	e.run("-o", "json", "jobs", "list", "--queue", "reports").ok(t).decode(t, &rows)
	if len(rows) != 1 || rows[0].Kind != "report" {
		t.Fatalf("reports jobs = %+v", rows)
	}
	// Keyset pages, newest first: 3, 2, then 1.
	r := e.run("-o", "json", "jobs", "list", "--limit", "2").ok(t)
	r.decode(t, &rows)
	if len(rows) != 2 || rows[0].ID != 3 || rows[1].ID != 2 {
		t.Fatalf("first page = %+v", rows)
	}
	e.run("-o", "json", "jobs", "list", "--limit", "2", "--after", "2").ok(t).decode(t, &rows)
	if len(rows) != 1 || rows[0].ID != 1 {
		t.Fatalf("second page = %+v", rows)
	}
	if r := e.run("jobs", "list", "--limit", "2"); !strings.Contains(r.stderr, "--after 2") {
		t.Fatalf("a full page does not say how to get the next: %q", r.stderr)
	}

	show := e.run("jobs", "show", "2").ok(t).stdout
	for _, want := range []string{"Kind:", "report", "Queue:", "reports", "Attempt:", "0 of 25", `"month": "2025-01"`, "Attempts: none"} {
		if !strings.Contains(show, want) {
			t.Errorf("show does not include %q:\n%s", want, show)
		}
	}

	if out := e.run("jobs", "cancel", "1").ok(t).stdout; out != "job 1 cancelled\n" {
		t.Fatalf("cancel: %q", out)
	}
	if out := e.run("jobs", "cancel", "1").ok(t).stdout; !strings.Contains(out, "already ended cancelled") {
		t.Fatalf("second cancel: %q", out)
	}
	var job rota.JobRow
	e.run("-o", "json", "jobs", "retry", "1").ok(t).decode(t, &job)
	if job.State != rota.StateAvailable {
		t.Fatalf("retried job is %s", job.State)
	}
	e.run("-o", "json", "jobs", "list", "--state", "cancelled").ok(t).decode(t, &rows)
	if len(rows) != 0 {
		t.Fatalf("cancelled jobs after retry: %+v", rows)
	}
	if out := e.run("jobs", "delete", "2").ok(t).stdout; out != "job 2 deleted\n" {
		t.Fatalf("delete: %q", out)
	}
	e.run("jobs", "show", "2").fails(t, "job 2 not found")
	e.run("jobs", "delete", "2").fails(t, "job 2 not found")
}

func TestJobsBadInput(t *testing.T) {
	e := newEnv(t)
	e.run("jobs", "show", "42").fails(t, "job 42 not found in sqlite:")
	e.run("jobs", "cancel", "42").fails(t, "job 42 not found")
	e.run("jobs", "retry", "42").fails(t, "job 42 not found")
	e.run("jobs", "show", "abc").fails(t, `job id "abc": want a positive number`)
	e.run("jobs", "list", "--state", "done").fails(t, `--state "done": use one of available, scheduled`)
	e.run("jobs", "list", "--limit", "0").fails(t, "--limit 0")
	e.run("-o", "yaml", "jobs", "list").fails(t, `--output "yaml": use table or json`)
	if out := e.run("jobs", "list").ok(t).stdout; out != "no jobs\n" {
		t.Fatalf("empty list: %q", out)
	}
	if out := e.run("-o", "json", "jobs", "list").ok(t).stdout; out != "[]\n" {
		t.Fatalf("empty JSON list: %q", out)
	}
}

// show gives each attempt's node, duration and outcome: the failed ones from their errors, the
// last from the job.
func TestPrintAttempts(t *testing.T) {
	t0 := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	row := &rota.JobRow{State: rota.StateRunning, Attempt: 2, AttemptedAt: t0.Add(time.Minute), AttemptedBy: "node-b", Owner: "node-b",
		Errors: []store.AttemptError{{Attempt: 1, At: t0.Add(1500 * time.Millisecond), Error: "boom", Node: "node-a", Duration: 1500 * time.Millisecond}}}
	var out strings.Builder
	a := &app{stdout: &out}
	a.printAttempts(row, t0.Add(time.Minute+3*time.Second))
	for _, want := range []string{"attempt 1 on node-a, started " + fmtTime(t0) + ", took 1.5s: boom",
		"attempt 2 running on node-b for 3s, since " + fmtTime(t0.Add(time.Minute))} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("attempts lack %q:\n%s", want, out.String())
		}
	}
	row.State, row.Owner, row.FinalizedAt = rota.StateCompleted, "", t0.Add(time.Minute+2*time.Second)
	out.Reset()
	a.printAttempts(row, t0.Add(time.Hour))
	if want := "attempt 2 on node-b, started " + fmtTime(t0.Add(time.Minute)) + ", took 2s: completed"; !strings.Contains(out.String(), want) {
		t.Errorf("attempts lack %q:\n%s", want, out.String())
	}
}

// A negative --after is refused, as the API refuses after=-5, not read as the first page.
func TestJobsListRefusesNegativeAfter(t *testing.T) {
	e := newEnv(t)
	e.run("enqueue", "exec", "--", "true").ok(t)
	e.run("jobs", "list", "--after", "-5").fails(t, "--after -5")
}

// Args nested deep are shown as they are, in a table and as JSON: indented, every level's
// indent would be written on every line, and 10 KiB of args would print 10 MiB.
func TestJobsShowDeeplyNestedArgs(t *testing.T) {
	e := newEnv(t)
	nest := strings.Repeat("[", 1000) + strings.Repeat("]", 1000)
	args := `{"a":[` + strings.Repeat(nest+",", 4) + nest + `]}`
	e.run("enqueue", "report", "--queue", "parked", "--args", args).ok(t)
	for _, cmd := range [][]string{{"jobs", "show", "1"}, {"-o", "json", "jobs", "show", "1"}} {
		out := e.run(cmd...).ok(t).stdout
		if len(out) > 4*len(args)+64<<10 {
			t.Errorf("%s printed %d bytes for %d bytes of args", strings.Join(cmd, " "), len(out), len(args))
		}
		if !strings.Contains(out, nest) {
			t.Errorf("%s does not show the args as they are", strings.Join(cmd, " "))
		}
	}
}
