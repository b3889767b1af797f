package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/builtin"
)

// progressInterval is how often `enqueue --wait` looks at the job to report failed attempts and
// a job nobody picks up. Client.Wait itself returns as soon as the job ends.
const progressInterval = 500 * time.Millisecond

// waitAndPrint waits for job to end and prints its outcome: an exec job's output, another
// kind's result as JSON, or the error it ended with.
func (a *app) waitAndPrint(ctx context.Context, client *rota.Client, job *rota.JobRow, timeout time.Duration) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	waitCtx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	row, err := a.watch(waitCtx, client, job)
	var failed *rota.JobFailedError
	switch {
	case errors.As(err, &failed):
		if a.jsonOutput() {
			_ = a.printJSON(failed.Job)
		}
		fmt.Fprintf(a.stderr, "rota: %s\n", printable(failed.Error()))
		return errSilent
	case err != nil && waitCtx.Err() != nil:
		state := "waiting"
		if now, gerr := client.Get(context.WithoutCancel(ctx), job.ID); gerr == nil {
			state = string(now.State)
		}
		why := "interrupted"
		if ctx.Err() == nil {
			why = fmt.Sprintf("gave up after %v", timeout)
		}
		fmt.Fprintf(a.stderr, "rota: %s: job %d is still %s and stays queued; see rota jobs show %d\n", why, job.ID, state, job.ID)
		return errSilent
	case err != nil:
		return err
	}
	if a.jsonOutput() {
		return a.printJSON(row)
	}
	return a.printResult(row)
}

// watch waits for the job to end, meanwhile telling the person at the terminal about failed
// attempts and about a due job that no node picks up.
func (a *app) watch(ctx context.Context, client *rota.Client, job *rota.JobRow) (*rota.JobRow, error) {
	type ended struct {
		row *rota.JobRow
		err error
	}
	done := make(chan ended, 1)
	go func() {
		row, err := client.Wait(ctx, job.ID)
		done <- ended{row, err}
	}()
	tick := time.NewTicker(progressInterval)
	defer tick.Stop()
	start := time.Now()
	reported, hinted := 0, false
	for {
		select {
		case e := <-done:
			return e.row, e.err
		case <-tick.C:
		}
		row, err := client.Get(ctx, job.ID)
		if err != nil {
			continue // Wait reports what matters
		}
		for ; reported < len(row.Errors) && !row.State.Final(); reported++ {
			e := row.Errors[reported]
			next := ""
			if reported == len(row.Errors)-1 {
				next = "; next attempt at " + fmtTime(row.RunAt)
			}
			fmt.Fprintf(a.stderr, "rota: job %d attempt %d of %d failed: %s%s\n", row.ID, e.Attempt, row.MaxAttempts, printable(e.Error), next)
		}
		if !hinted && waitingForNode(row, start, a.startHint) {
			hinted = true
			fmt.Fprintf(a.stderr, "rota: job %d has not started after %v; is `rota serve` running against this store (%s)?\n",
				row.ID, a.startHint, a.storeName())
		}
	}
}

// waitingForNode reports whether the job has been due for longer than hint without starting.
func waitingForNode(row *rota.JobRow, waitStart time.Time, hint time.Duration) bool {
	switch row.State {
	case rota.StateAvailable, rota.StateScheduled, rota.StateRetryable:
	default:
		return false
	}
	due := row.RunAt
	if waitStart.After(due) {
		due = waitStart
	}
	return time.Since(due) > hint
}

// printResult prints a completed job's result: an exec job's output as the program wrote it,
// anything else as indented JSON.
func (a *app) printResult(row *rota.JobRow) error {
	if row.Kind == builtin.KindExec {
		var res builtin.ExecResult
		if err := json.Unmarshal(row.Result, &res); err == nil {
			_, _ = io.WriteString(a.stdout, res.Stdout)
			_, _ = io.WriteString(a.stderr, res.Stderr)
			if res.Truncated {
				fmt.Fprintf(a.stderr, "rota: output truncated: a job keeps the first max_output_bytes of each stream (default %d)\n", builtin.OutputBytesDefault)
			}
			return nil
		}
	}
	if len(row.Result) == 0 {
		fmt.Fprintf(a.stderr, "rota: job %d completed with no result\n", row.ID)
		return nil
	}
	fmt.Fprintln(a.stdout, prettyJSON(row.Result, ""))
	return nil
}
