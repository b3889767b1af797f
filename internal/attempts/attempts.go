// Package attempts lays out a job's attempts as an operator reads them: which node ran each, from
// when, for how long and how it ended. The dashboard and the CLI show the same rows.
package attempts

import (
	"time"

	"github.com/rotahq/rota/store"
)

// Attempt is one attempt of a job, or one error the job recorded.
type Attempt struct {
	// Number is the attempt's number; an error recorded before the first attempt (a dependency
	// that failed) has 0.
	Number int
	// Node ran the attempt; empty when the store did not say (an error that ended no attempt, or
	// one recorded before stores kept it).
	Node string
	// Started and Duration are zero when not known. A running attempt's Duration is up to now.
	Started  time.Time
	Duration time.Duration
	Running  bool
	// Outcome is "error" for a recorded error, "running", or the final state the last attempt
	// ended the job in.
	Outcome string
	Error   string
	Trace   string
}

// Of returns j's attempts, oldest first: one per recorded error, then the last attempt when no
// error ended it and it runs or ended the job. now times a running attempt.
func Of(j *store.JobRow, now time.Time) []Attempt {
	var out []Attempt
	covered := false
	for _, e := range j.Errors {
		a := Attempt{Number: e.Attempt, Node: e.Node, Duration: e.Duration, Outcome: "error", Error: e.Error, Trace: e.Trace}
		if e.Duration > 0 {
			a.Started = e.At.Add(-e.Duration)
		}
		covered = covered || e.Attempt == j.Attempt
		out = append(out, a)
	}
	if covered || j.Attempt == 0 || j.AttemptedAt.IsZero() {
		return out
	}
	last := Attempt{Number: j.Attempt, Node: j.AttemptedBy, Started: j.AttemptedAt}
	switch {
	case j.State == store.StateRunning:
		if j.Owner != "" {
			last.Node = j.Owner
		}
		last.Running, last.Outcome, last.Duration = true, "running", max(now.Sub(j.AttemptedAt), 0)
	case j.State.Final() && !j.FinalizedAt.Before(j.AttemptedAt):
		last.Outcome, last.Duration = string(j.State), j.FinalizedAt.Sub(j.AttemptedAt)
	default:
		return out
	}
	return append(out, last)
}

// Duration shows d for people: to the millisecond, "-" when unknown (zero).
func Duration(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	if d < time.Millisecond {
		return d.String()
	}
	return d.Round(time.Millisecond).String()
}
