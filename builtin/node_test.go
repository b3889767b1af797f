package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/builtin"
	"github.com/rotahq/rota/store/sqlite"
)

// startNode runs the built-in kinds on a node over a fresh SQLite store.
func startNode(t *testing.T, cfg builtin.Config) *rota.Client {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "rota.db"), sqlite.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ws := rota.NewWorkers()
	builtin.Register(ws, cfg)
	node, err := rota.NewNode(rota.Config{Store: st, Workers: ws, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// t.Context() is already done when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := node.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return node.Client()
}

// run inserts a job and waits for its end.
func run(t *testing.T, c *rota.Client, args rota.Args, opts *rota.InsertOpts) (*rota.JobRow, error) {
	t.Helper()
	res, err := c.Insert(t.Context(), args, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c.Wait(t.Context(), res.Job.ID)
}

func TestNodeRunsExecAndRecordsResult(t *testing.T) {
	c := startNode(t, builtin.Config{})
	row, err := run(t, c, builtin.ExecArgs{Program: "echo", Args: []string{"hello"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var res builtin.ExecResult
	if err := json.Unmarshal(row.Result, &res); err != nil || res.Stdout != "hello\n" || res.ExitCode != 0 {
		t.Fatalf("result %s (%v)", row.Result, err)
	}
}

// What no retry can fix ends the job at once; a failing program uses its attempts.
func TestNodeFinalStates(t *testing.T) {
	c := startNode(t, builtin.Config{AllowPrograms: []string{"sh", "echo"}})
	for _, tc := range []struct {
		name  string
		args  rota.Args
		state rota.State
		err   string
	}{
		{"not allowed", builtin.ExecArgs{Program: "true"}, rota.StateCancelled, `program "true" is not on this node's allow-list`},
		{"misspelt field", rota.RawArgs{KindName: "exec", JSON: json.RawMessage(`{"program":"echo","arg":["x"]}`)}, rota.StateDiscarded, `unknown field "arg"`},
		{"exit code", builtin.ExecArgs{Program: "sh", Args: []string{"-c", "exit 7"}}, rota.StateDiscarded, "exited with code 7"},
		{"bad url", builtin.HTTPArgs{URL: "gopher://x"}, rota.StateCancelled, "scheme must be http or https"},
	} {
		row, err := run(t, c, tc.args, &rota.InsertOpts{MaxAttempts: 1})
		var failed *rota.JobFailedError
		if !errors.As(err, &failed) {
			t.Fatalf("%s: err = %v, want a failed job", tc.name, err)
		}
		if row.State != tc.state || len(row.Errors) != 1 || !strings.Contains(row.Errors[0].Error, tc.err) {
			t.Errorf("%s: job ended %s with errors %+v; want %s with %q", tc.name, row.State, row.Errors, tc.state, tc.err)
		}
	}
}

// Cancelling a running exec job stops its program, and the job ends cancelled.
func TestNodeCancelStopsProgram(t *testing.T) {
	c := startNode(t, builtin.Config{})
	res, err := c.Insert(t.Context(), builtin.ExecArgs{Program: "sleep", Args: []string{"60"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := res.Job.ID
	deadline := time.Now().Add(20 * time.Second)
	for {
		row, err := c.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if row.State == rota.StateRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job is %s, never running", row.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	if _, err := c.Cancel(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	row, err := c.Wait(t.Context(), id)
	if row == nil || row.State != rota.StateCancelled {
		t.Fatalf("job = %+v, err = %v; want cancelled", row, err)
	}
	if d := time.Since(start); d > builtin.KillGrace+5*time.Second {
		t.Fatalf("cancel took %v", d)
	}
}

// A program learns which run of which job it is, and a job's own env cannot say otherwise: the
// fence is what a program guards a shared side effect with.
func TestNodeExecGetsTheJobsIdentity(t *testing.T) {
	c := startNode(t, builtin.Config{})
	row, err := run(t, c, builtin.ExecArgs{
		Program: "sh",
		Args:    []string{"-c", `echo "$ROTA_JOB_ID $ROTA_JOB_ATTEMPT $ROTA_JOB_FENCE"`},
		Env:     map[string]string{builtin.EnvJobFence: "-7", builtin.EnvJobID: "-7"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var res builtin.ExecResult
	if err := json.Unmarshal(row.Result, &res); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d %d %d\n", row.ID, row.Attempt, row.Fence)
	if res.Stdout != want {
		t.Fatalf("program saw %q, want %q (the job's id, attempt and fence)", res.Stdout, want)
	}
}

// A failed program's output is kept with its attempt: the error says the end of stderr, and the
// attempt's details hold the end of both stdout and stderr, which a failed attempt's result
// (never recorded) cannot.
func TestNodeKeepsAFailedProgramsOutput(t *testing.T) {
	c := startNode(t, builtin.Config{})
	row, _ := run(t, c, builtin.ExecArgs{Program: "sh", Args: []string{"-c", "echo processed 41 of 42; echo no space left >&2; exit 3"}},
		&rota.InsertOpts{MaxAttempts: 1})
	if row.State != rota.StateDiscarded || len(row.Errors) != 1 {
		t.Fatalf("job %s, errors %+v", row.State, row.Errors)
	}
	e := row.Errors[0]
	if !strings.Contains(e.Error, "exited with code 3; stderr: no space left") {
		t.Errorf("error %q", e.Error)
	}
	if e.Trace != "stdout:\nprocessed 41 of 42\n\nstderr:\nno space left" {
		t.Errorf("details %q", e.Trace)
	}
}

// A non-2xx answer's error quotes the end of the body, as the body.
func TestNodeHTTPErrorQuotesTheBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "quota exceeded", http.StatusTooManyRequests)
	}))
	defer srv.Close()
	c := startNode(t, builtin.Config{HTTPAllow: []string{"127.0.0.1"}})
	row, _ := run(t, c, builtin.HTTPArgs{URL: srv.URL}, &rota.InsertOpts{MaxAttempts: 1})
	if len(row.Errors) != 1 || !strings.Contains(row.Errors[0].Error, "HTTP 429 Too Many Requests; body: quota exceeded") {
		t.Fatalf("errors %+v", row.Errors)
	}
}
