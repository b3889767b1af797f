// Package rotatest helps test code that uses rota: run a worker on a job built by hand, as a node
// would hand it over, and check which jobs a piece of code inserted.
//
//	func TestReportWorker(t *testing.T) {
//		res := rotatest.Work(t, &ReportWorker{}, ReportArgs{Month: "2026-11"}, nil)
//		if res.Err != nil { t.Fatal(res.Err) }
//	}
//
//	func TestSignupEnqueuesTheWelcomeMail(t *testing.T) {
//		signup(ctx, client, "ada@example.com")
//		rotatest.RequireInserted(t, client, WelcomeArgs{Email: "ada@example.com"}, &rotatest.Expect{Queue: "mail"})
//	}
package rotatest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota"
)

// WorkOpts shapes the job Work builds. Zero values give what a first attempt of a freshly
// inserted job has.
type WorkOpts struct {
	// ID is the job's id (default 1); Attempt its attempt (default 1, the first); MaxAttempts
	// defaults to rota.MaxAttemptsDefault, Queue to rota.QueueDefault.
	ID          int64
	Attempt     int
	MaxAttempts int
	Queue       string
	// Timeout bounds the run; 0 leaves only the test's own deadline.
	Timeout time.Duration
}

// WorkResult is how a run of a worker ended.
type WorkResult struct {
	// Err is what Work returned (or the panic it raised, as an error): nil completes the job;
	// rota.Cancel, rota.Snooze and plain errors mean what they mean on a node.
	Err error
	// Result is what the worker set with SetResult, as JSON; nil if it set none.
	Result json.RawMessage
	// Job is the job as the worker saw it.
	Job *rota.JobRow
}

// Work runs w on a job whose args are args, as a node would: the args go through their JSON
// encoding and back (a field that does not survive it fails the test), the job is running, at
// its first attempt unless opts say otherwise, and a panic is an error, as it would be.
func Work[T rota.Args](t testing.TB, w rota.Worker[T], args T, opts *WorkOpts) WorkResult {
	t.Helper()
	if opts == nil {
		opts = &WorkOpts{}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatalf("rotatest: encode args of kind %s: %v", args.Kind(), err)
	}
	var decoded T
	if err := json.Unmarshal(raw, &decoded); err != nil {
		t.Fatalf("rotatest: args of kind %s do not decode from their own JSON %s: %v", args.Kind(), raw, err)
	}
	now := time.Now().UTC()
	row := &rota.JobRow{
		ID: or(opts.ID, 1), Kind: args.Kind(), Queue: orString(opts.Queue, rota.QueueDefault), Args: raw,
		State: rota.StateRunning, Attempt: or(opts.Attempt, 1), MaxAttempts: or(opts.MaxAttempts, rota.MaxAttemptsDefault),
		RunAt: now, CreatedAt: now, AttemptedAt: now, Fence: 1, Owner: "rotatest",
		AttemptedBy: "rotatest",
	}
	job := &rota.Job[T]{JobRow: row, Args: decoded}
	ctx := t.Context()
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	res := WorkResult{Job: row}
	func() {
		defer func() {
			if p := recover(); p != nil {
				res.Err = fmt.Errorf("rotatest: worker for %s panicked: %v", args.Kind(), p)
			}
		}()
		res.Err = w.Work(ctx, job)
	}()
	res.Result = row.Result
	return res
}

// Expect narrows which inserted jobs RequireInserted accepts; zero fields match anything.
type Expect struct {
	Queue       string
	Priority    int
	MaxAttempts int
	State       rota.State
	// ScheduledAfter matches jobs whose RunAt is after it.
	ScheduledAfter time.Time
}

// RequireInserted fails the test unless client's store holds a job of want's kind whose args
// equal want (as JSON values: key order and spacing do not matter) and that matches expect, and
// returns the newest such job.
func RequireInserted[T rota.Args](t testing.TB, client *rota.Client, want T, expect *Expect) *rota.JobRow {
	t.Helper()
	match, seen := find(t, client, want, expect)
	if match == nil {
		t.Fatalf("rotatest: no job of kind %s with args %s%s was inserted; jobs of that kind:\n%s",
			want.Kind(), mustJSON(t, want), describe(expect), seen)
	}
	return match
}

// RequireNotInserted fails the test if client's store holds a job of want's kind whose args
// equal want and that matches expect.
func RequireNotInserted[T rota.Args](t testing.TB, client *rota.Client, want T, expect *Expect) {
	t.Helper()
	if match, _ := find(t, client, want, expect); match != nil {
		t.Fatalf("rotatest: job %d of kind %s with args %s%s was inserted, and should not have been",
			match.ID, want.Kind(), match.Args, describe(expect))
	}
}

// findLimit bounds the jobs of one kind RequireInserted looks through: a test's own store.
const findLimit = 10000

// find returns the newest job matching want and expect, and a listing of the kind's jobs for a
// failure message.
func find[T rota.Args](t testing.TB, client *rota.Client, want T, expect *Expect) (*rota.JobRow, string) {
	t.Helper()
	if expect == nil {
		expect = &Expect{}
	}
	wantJSON := canonical(t, mustJSON(t, want))
	rows, err := client.List(t.Context(), rota.ListParams{Kind: want.Kind(), Desc: true, Limit: findLimit})
	if err != nil {
		t.Fatalf("rotatest: list jobs of kind %s: %v", want.Kind(), err)
	}
	var seen strings.Builder
	for _, j := range rows {
		fmt.Fprintf(&seen, "  job %d: %s in %s, args %s\n", j.ID, j.State, j.Queue, j.Args)
		if !bytes.Equal(canonical(t, j.Args), wantJSON) {
			continue
		}
		if (expect.Queue != "" && j.Queue != expect.Queue) || (expect.Priority != 0 && j.Priority != expect.Priority) ||
			(expect.MaxAttempts != 0 && j.MaxAttempts != expect.MaxAttempts) || (expect.State != "" && j.State != expect.State) ||
			(!expect.ScheduledAfter.IsZero() && !j.RunAt.After(expect.ScheduledAfter)) {
			continue
		}
		return j, ""
	}
	if seen.Len() == 0 {
		seen.WriteString("  (none)\n")
	}
	return nil, seen.String()
}

func describe(e *Expect) string {
	if e == nil {
		return ""
	}
	var parts []string
	if e.Queue != "" {
		parts = append(parts, "queue "+e.Queue)
	}
	if e.Priority != 0 {
		parts = append(parts, fmt.Sprintf("priority %d", e.Priority))
	}
	if e.MaxAttempts != 0 {
		parts = append(parts, fmt.Sprintf("max attempts %d", e.MaxAttempts))
	}
	if e.State != "" {
		parts = append(parts, "state "+string(e.State))
	}
	if !e.ScheduledAfter.IsZero() {
		parts = append(parts, "run after "+e.ScheduledAfter.Format(time.RFC3339))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func mustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("rotatest: encode %T: %v", v, err)
	}
	return b
}

// canonical is a JSON value re-encoded with sorted keys and no spacing, numbers as written.
func canonical(t testing.TB, b []byte) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("rotatest: args %s: %v", b, err)
	}
	out, _ := json.Marshal(v)
	return out
}

func or[N int | int64](v, def N) N {
	if v == 0 {
		return def
	}
	return v
}

func orString(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
