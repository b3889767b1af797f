package rota

import (
	"errors"
	"fmt"
	"time"
)

// Snooze ends the attempt without counting it and runs the job again after d. Use it when the job
// cannot proceed yet (a resource is busy) and that is not a failure.
func Snooze(d time.Duration) error { return &snoozeError{d: d} }

// Cancel ends the job for good as cancelled, recording err: no retry can help it.
func Cancel(err error) error {
	if err == nil {
		err = errors.New("cancelled by the worker")
	}
	return &cancelError{err: err}
}

// Superseded ends the job quietly as cancelled, because newer work has made it pointless. It is
// logged as a warning, not counted as a failure.
func Superseded(reason string) error { return &supersededError{reason: reason} }

type snoozeError struct{ d time.Duration }

func (e *snoozeError) Error() string { return fmt.Sprintf("snoozed for %v", e.d) }

type cancelError struct{ err error }

func (e *cancelError) Error() string { return "cancelled: " + e.err.Error() }
func (e *cancelError) Unwrap() error { return e.err }

type supersededError struct{ reason string }

func (e *supersededError) Error() string { return "superseded: " + e.reason }

// JobFailedError is what Wait returns for a job that ended without completing.
type JobFailedError struct {
	Job *JobRow
}

func (e *JobFailedError) Error() string {
	msg := fmt.Sprintf("job %d (%s) ended %s", e.Job.ID, e.Job.Kind, e.Job.State)
	if n := len(e.Job.Errors); n > 0 {
		msg += ": " + e.Job.Errors[n-1].Error
	}
	return msg
}

func fmtErr(what string, err error) error { return fmt.Errorf("rota: %s: %w", what, err) }
