package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota"
)

// startServe runs `rota serve` in-process until the test ends, and returns its log. It returns
// once the node has started.
func startServe(t *testing.T, e *env, args ...string) *syncBuffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		a := newApp(&stdout, &stderr)
		done <- a.run(ctx, append([]string{"--store", e.store, "serve"}, args...))
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d:\n%s", code, stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Errorf("serve did not stop:\n%s", stderr.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stderr.String(), "rota: serving") {
		select {
		case code := <-done:
			t.Fatalf("serve exited %d at start:\n%s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return &stderr
}

func TestServeRunsBuiltinKinds(t *testing.T) {
	e := newEnv(t)
	// The test's webhook listens on loopback, which http jobs may not reach unless allowed.
	startServe(t, e, "--queues", "default=4,other", "--http-allow", "127.0.0.1")

	r := e.run("enqueue", "exec", "--wait", "--timeout", "30s", "--", "echo", "hello").ok(t)
	if r.stdout != "hello\n" {
		t.Fatalf("stdout = %q, want %q (stderr %q)", r.stdout, "hello\n", r.stderr)
	}
	r = e.run("enqueue", "exec", "--queue", "other", "--wait", "--timeout", "30s", "--", "sh", "-c", "echo to-stderr >&2").ok(t)
	if r.stdout != "" || r.stderr != "to-stderr\n" {
		t.Fatalf("stdout = %q, stderr = %q", r.stdout, r.stderr)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, "got "+string(b))
	}))
	defer srv.Close()
	r = e.run("enqueue", "http", "--wait", "--timeout", "30s", "--args", `{"url":"`+srv.URL+`","body":"ping"}`).ok(t)
	var res struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	}
	r.decode(t, &res)
	if res.Status != 200 || res.Body != "got ping" {
		t.Fatalf("http result = %+v", res)
	}

	// A failed job prints its error and exits non-zero; the node keeps running.
	e.run("enqueue", "exec", "--max-attempts", "1", "--wait", "--timeout", "30s", "--", "sh", "-c", "echo broken >&2; exit 3").
		fails(t, "ended discarded: program sh exited with code 3; stderr: broken")
	e.run("enqueue", "exec", "--wait", "--timeout", "30s", "--", "rota-no-such-program").
		fails(t, "ended cancelled")

	var job rota.JobRow
	e.run("-o", "json", "enqueue", "exec", "--wait", "--timeout", "30s", "--", "echo", "json").ok(t).decode(t, &job)
	var execRes struct{ Stdout string }
	if err := json.Unmarshal(job.Result, &execRes); err != nil || job.State != rota.StateCompleted || execRes.Stdout != "json\n" {
		t.Fatalf("job %d is %s with result %s", job.ID, job.State, job.Result)
	}
}

// A retried attempt is reported while --wait waits.
func TestServeWaitReportsFailedAttempts(t *testing.T) {
	e := newEnv(t)
	startServe(t, e)
	flag := t.TempDir() + "/second"
	// Fails the first time, succeeds the second (the backoff before it is about a second).
	script := `if [ -e "$0" ]; then echo recovered; else touch "$0"; echo first-try >&2; exit 1; fi`
	r := e.run("enqueue", "exec", "--wait", "--timeout", "60s", "--", "sh", "-c", script, flag).ok(t)
	if r.stdout != "recovered\n" {
		t.Fatalf("stdout = %q", r.stdout)
	}
	if !strings.Contains(r.stderr, "job 1 attempt 1 of 25 failed: program sh exited with code 1; stderr: first-try") {
		t.Fatalf("stderr does not report the failed attempt:\n%s", r.stderr)
	}
}

func TestServeAllowList(t *testing.T) {
	e := newEnv(t)
	startServe(t, e, "--allow-program", "echo")
	if r := e.run("enqueue", "exec", "--wait", "--timeout", "30s", "--", "echo", "ok").ok(t); r.stdout != "ok\n" {
		t.Fatalf("stdout = %q", r.stdout)
	}
	e.run("enqueue", "exec", "--wait", "--timeout", "30s", "--", "sh", "-c", "echo no").
		fails(t, `ended cancelled: cancelled: program "sh" is not on this node's allow-list (echo)`)
}

func TestServeBadFlags(t *testing.T) {
	e := newEnv(t)
	e.run("serve", "--queues", "default=0").fails(t, "concurrency must be a whole number of at least 1")
	e.run("serve", "--queues", "a,a").fails(t, `queue "a" is named twice`)
	e.run("serve", "--queues", "bad name").fails(t, `queue "bad name"`)
	e.run("serve", "--log-format", "xml").fails(t, `--log-format "xml"`)
	e.run("serve", "--log-level", "loud").fails(t, `--log-level "loud"`)
	e.run("serve", "--kinds", "ftp").fails(t, `--kinds "ftp": the built-in kinds are exec, http`)
	e.run("serve", "--no-exec", "--no-http").fails(t, "leave this node no kind to run")
	e.run("serve", "--kinds", "http", "--no-http").fails(t, "leave this node no kind to run")
	e.run("serve", "--allow-env", "LANG").fails(t, "--allow-env needs --allow-program")
	e.run("serve", "--pass-env", "ROTA_API_TOKEN").fails(t, "ROTA_API_TOKEN")
	e.run("serve", "--http-allow", "10.0.0.0/33").fails(t, "--http-allow")
}

// A node can leave built-in kinds out: a job of a kind it does not run waits for a node that
// does, untouched.
func TestServeNoExec(t *testing.T) {
	e := newEnv(t)
	log := startServe(t, e, "--no-exec", "--http-allow", "127.0.0.1")
	if !strings.Contains(log.String(), "kinds=[http]") {
		t.Fatalf("serve does not say it runs http only:\n%s", log)
	}
	e.run("enqueue", "exec", "--", "echo", "never").ok(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	e.run("enqueue", "http", "--wait", "--timeout", "30s", "--args", `{"url":"`+srv.URL+`"}`).ok(t)
	var job rota.JobRow
	e.run("-o", "json", "jobs", "show", "1").ok(t).decode(t, &job)
	if job.Kind != "exec" || job.State != rota.StateAvailable || job.Attempt != 0 {
		t.Fatalf("the exec job, with exec turned off: %s, attempt %d, want available, never tried", job.State, job.Attempt)
	}
}

// Programs get none of rota's own environment, its secrets least of all, only the minimal set and
// what --pass-env names.
func TestServeProgramsGetACleanEnvironment(t *testing.T) {
	t.Setenv("ROTA_API_TOKEN", "the-api-token")
	t.Setenv("ROTA_TEST_SECRET", "the-store-password")
	t.Setenv("DEPLOY_ENV", "staging")
	t.Setenv("UNPASSED", "kept-back")
	e := newEnv(t)
	startServe(t, e, "--pass-env", "DEPLOY_ENV")
	r := e.run("enqueue", "exec", "--wait", "--timeout", "30s", "--", "env").ok(t)
	for _, leaked := range []string{"the-api-token", "the-store-password", "kept-back", "ROTA_API", "ROTA_TEST", "ROTA_STORE"} {
		if strings.Contains(r.stdout, leaked) {
			t.Errorf("the program's environment holds %q:\n%s", leaked, r.stdout)
		}
	}
	// The only ROTA_ variables are the run's own identity, which rota sets.
	for line := range strings.Lines(r.stdout) {
		name, _, _ := strings.Cut(line, "=")
		if strings.HasPrefix(name, "ROTA_") && name != "ROTA_JOB_ID" && name != "ROTA_JOB_ATTEMPT" && name != "ROTA_JOB_FENCE" {
			t.Errorf("the program's environment holds %s", strings.TrimSpace(line))
		}
	}
	if !strings.Contains(r.stdout, "DEPLOY_ENV=staging\n") {
		t.Errorf("the program did not get DEPLOY_ENV from --pass-env:\n%s", r.stdout)
	}
}

func TestServeJSONLogs(t *testing.T) {
	e := newEnv(t)
	log := startServe(t, e, "--log-format", "json")
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	for _, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec["msg"] == nil {
			t.Fatalf("not a JSON log line: %q", l)
		}
	}
}

// Lease and interval flags that cannot work are refused before the node starts, naming the flag:
// a negative one used to panic in a ticker once the node ran.
func TestServeRefusesLeaseAndIntervalsThatCannotWork(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{
		{"--job-lease", "-1s"},
		{"--job-lease", "2ns"},
		{"--rescue-interval", "-1s"},
		{"--leader-ttl", "-5s"},
		{"--leader-try", "0s"},
		{"--leader-renew", "10s", "--leader-ttl", "15s"},
	} {
		e.run(append([]string{"serve"}, args...)...).fails(t, args[0]+" "+args[1])
	}
}

// The HTTP API's flags without --http-addr are refused, naming the flag: there would be no API
// for them to apply to.
func TestServeRefusesAPIFlagsWithoutAnAddress(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{
		{"--api-token-file", "/nonexistent"},
		{"--api-no-auth"},
		{"--api-allow-host", "example.test"},
		{"--api-trusted-proxy", "10.0.0.1"},
	} {
		e.run(append([]string{"serve"}, args...)...).fails(t, args[0]+" needs --http-addr")
	}
}
