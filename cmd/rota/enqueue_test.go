package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota"
)

func TestEnqueueExecProgramAfterDash(t *testing.T) {
	e := newEnv(t)
	r := e.run("enqueue", "exec", "--queue", "ops", "--priority", "5", "--", "echo", "hello", "--not-a-flag").ok(t)
	if want := "job 1 enqueued: exec on queue ops, available\n"; r.stdout != want {
		t.Fatalf("stdout = %q, want %q", r.stdout, want)
	}
	var job rota.JobRow
	e.run("-o", "json", "jobs", "show", "1").ok(t).decode(t, &job)
	var args struct {
		Program string   `json:"program"`
		Args    []string `json:"args"`
	}
	if err := json.Unmarshal(job.Args, &args); err != nil {
		t.Fatal(err)
	}
	if args.Program != "echo" || strings.Join(args.Args, " ") != "hello --not-a-flag" || job.Queue != "ops" || job.Priority != 5 {
		t.Fatalf("job = %+v, args %+v", job, args)
	}
}

func TestEnqueueJSONOutputAndOptions(t *testing.T) {
	e := newEnv(t)
	var job rota.JobRow
	before := time.Now()
	e.run("-o", "json", "enqueue", "http", "--args", `{"url":"http://127.0.0.1:1/"}`, "--in", "1h",
		"--max-attempts", "3", "--expires-in", "2h").ok(t).decode(t, &job)
	if job.Kind != "http" || job.State != rota.StateScheduled || job.MaxAttempts != 3 {
		t.Fatalf("job = %+v", job)
	}
	if d := job.RunAt.Sub(before); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("run at %v is not an hour after %v", job.RunAt, before)
	}
	if d := job.ExpiresAt.Sub(before); d < 119*time.Minute || d > 121*time.Minute {
		t.Fatalf("expires at %v is not two hours after %v", job.ExpiresAt, before)
	}
	at := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Second)
	e.run("-o", "json", "enqueue", "exec", "--at", at.Format(time.RFC3339), "--", "true").ok(t).decode(t, &job)
	if !job.RunAt.Equal(at) {
		t.Fatalf("run at %v, want %v", job.RunAt, at)
	}
}

func TestEnqueueRejectsMalformedArgs(t *testing.T) {
	e := newEnv(t)
	e.run("enqueue", "report", "--args", "{\"month\":\n  2025-01}").fails(t, "--args is not valid JSON: invalid character '-' after object key:value pair at line 2, column 7")
	e.run("enqueue", "report", "--args", `{"month":`).fails(t, "unexpected end of JSON input")
	e.run("enqueue", "report", "--args", `[1,2]`).fails(t, "--args must be a JSON object")
	e.run("enqueue", "exec", "--args", `{"program":"echo","arg":["x"]}`).fails(t, `unknown field "arg"`)
	e.run("enqueue", "http", "--args", `{"url":"ftp://example.com"}`).fails(t, "scheme must be http or https")
	e.run("enqueue", "exec").fails(t, "program is empty")
	assertNoJobs(t, e)
}

func TestEnqueueRejectsBadTiming(t *testing.T) {
	e := newEnv(t)
	e.run("enqueue", "exec", "--in", "-5s", "--", "true").fails(t, "--in -5s is negative")
	e.run("enqueue", "exec", "--in=-5s", "--", "true").fails(t, "--in -5s is negative")
	e.run("enqueue", "exec", "--in", "-5m", "--", "true").fails(t, "--in -5m is negative") // as typed, not -5m0s
	e.run("enqueue", "exec", "--at", "2020-01-01T00:00:00Z", "--", "true").fails(t, "--at 2020-01-01T00:00:00Z is ")
	e.run("enqueue", "exec", "--at", time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), "--", "true").fails(t, "in the past")
	e.run("enqueue", "exec", "--in", "5s", "--at", "2030-01-01T00:00:00Z", "--", "true").fails(t, "give one")
	e.run("enqueue", "exec", "--at", "tomorrow", "--", "true").fails(t, "RFC 3339")
	e.run("enqueue", "exec", "--expires-in", "0s", "--", "true").fails(t, "must be positive")
	e.run("enqueue", "exec", "--max-attempts", "0", "--", "true").fails(t, "at least 1")
	e.run("enqueue", "exec", "--timeout", "5s", "--", "true").fails(t, "add --wait")
	assertNoJobs(t, e)
}

func TestEnqueueRejectsBadNamesAndArguments(t *testing.T) {
	e := newEnv(t)
	e.run("enqueue", "bad kind!").fails(t, `kind "bad kind!"`)
	e.run("enqueue", "exec", "--queue", "no spaces", "--", "true").fails(t, `queue "no spaces"`)
	e.run("enqueue", "exec", "echo", "hi").fails(t, "goes after --")
	e.run("enqueue", "report", "--", "echo").fails(t, "only exec jobs take a program after --")
	e.run("enqueue", "exec", "--args", `{"program":"ls"}`, "--", "echo").fails(t, "given twice")
	e.run("enqueue", "--", "exec").fails(t, "name the kind before --")
	e.run("enqueue").fails(t, "enqueue needs the job's kind")
	assertNoJobs(t, e)
}

// A kind no built-in worker runs is inserted (producers need not host workers) with a warning.
func TestEnqueueUnknownKindWarns(t *testing.T) {
	e := newEnv(t)
	r := e.run("enqueue", "report", "--args", `{"month":"2025-01"}`).ok(t)
	if !strings.Contains(r.stderr, `warning: "report" is not a built-in kind`) {
		t.Fatalf("no warning on stderr: %q", r.stderr)
	}
	if !strings.Contains(r.stdout, "job 1 enqueued: report on queue default, available") {
		t.Fatalf("stdout = %q", r.stdout)
	}
	if r := e.run("enqueue", "exec", "--", "true").ok(t); r.stderr != "" {
		t.Fatalf("a built-in kind warns: %q", r.stderr)
	}
}

func TestEnqueueWaitHintsWhenNothingRuns(t *testing.T) {
	e := newEnv(t)
	e.startHint = 300 * time.Millisecond
	r := e.run("enqueue", "exec", "--wait", "--timeout", "2s", "--", "echo", "hello")
	r.fails(t, "gave up after 2s: job 1 is still available and stays queued")
	if n := strings.Count(r.stderr, "is `rota serve` running against this store"); n != 1 {
		t.Fatalf("hint printed %d times, want once:\n%s", n, r.stderr)
	}
	if r.stdout != "" {
		t.Fatalf("stdout = %q", r.stdout)
	}
}

// A job delayed past the wait's start is not "not picked up": no hint before it is due.
func TestEnqueueWaitNoHintForDelayedJob(t *testing.T) {
	e := newEnv(t)
	e.startHint = 200 * time.Millisecond
	r := e.run("enqueue", "exec", "--in", "1h", "--wait", "--timeout", "1s", "--", "true")
	r.fails(t, "job 1 is still scheduled")
	if strings.Contains(r.stderr, "rota serve") {
		t.Fatalf("hint for a job not yet due:\n%s", r.stderr)
	}
}

func TestPosition(t *testing.T) {
	for _, tc := range []struct {
		s         string
		off       int64
		line, col int
	}{{"", 0, 1, 1}, {"abc", 2, 1, 2}, {"a\nbc", 3, 2, 1}, {"a\nbc", 4, 2, 2}, {"ab", 10, 1, 2}} {
		if l, c := position(tc.s, tc.off); l != tc.line || c != tc.col {
			t.Errorf("position(%q, %d) = %d:%d, want %d:%d", tc.s, tc.off, l, c, tc.line, tc.col)
		}
	}
}

func assertNoJobs(t *testing.T, e *env) {
	t.Helper()
	var jobs []rota.JobRow
	e.run("-o", "json", "jobs", "list").ok(t).decode(t, &jobs)
	if len(jobs) != 0 {
		t.Fatalf("rejected input inserted %d jobs", len(jobs))
	}
}
