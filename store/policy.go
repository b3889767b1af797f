package store

// What a store writes of its own accord. A store applies transitions, but a few of them it makes
// without being told the end state or the words: a rescue, the override of an outcome by a
// cancel request, the cancellation of a schedule's planned jobs. Those decisions and texts are
// made here, once, so that every store leaves a job in the same state with the same error, and a
// new store implements the contract without copying them out of another store's SQL. Stores pass
// the results to their statements as values; the texts are what users, dashboards and tests read.

// CancelRequestedState is the state an outcome in state s leaves its job in when a user asked to
// cancel the job while it ran (JobRow.CancelRequested). An outcome that would run the job again
// (retryable, scheduled, available) ends it cancelled instead: the request reached the store
// after the node had let the job go, and running the job again would ignore it. A final outcome
// stands: the attempt ended anyway, and says how.
func CancelRequestedState(s State) State {
	switch s {
	case StateRetryable, StateScheduled, StateAvailable:
		return StateCancelled
	}
	return s
}

// RescueState is the state a rescued job ends in: a job running attempt of maxAttempts whose
// lease expired. The lost attempt counts as a failed one, so the job becomes retryable, due at
// once, while it has attempts left, and discarded when not. A job a user asked to cancel while
// it ran ends cancelled, attempts left or not: nobody is left to tell the user it failed, and
// the user wanted it to stop.
func RescueState(attempt, maxAttempts int, cancelRequested bool) State {
	switch {
	case cancelRequested:
		return StateCancelled
	case attempt < maxAttempts:
		return StateRetryable
	}
	return StateDiscarded
}

// RescueError is the error a rescue records for the lost attempt of a job that owner was running:
// the node died, hung or lost the store, and its lease ran out.
func RescueError(owner string) string {
	return "lease expired: node " + owner + " stopped renewing it"
}

// ScheduleChangedError is the error recorded on the jobs that schedule planned and that
// UpsertSchedule cancelled because the schedule's timing changed: its occurrences are planned
// again under the new timing.
func ScheduleChangedError(schedule string) string {
	return "schedule " + schedule + " changed: occurrence replanned"
}

// ScheduleRemovedError is the error recorded on the jobs that schedule planned and that
// DeleteSchedule cancelled.
func ScheduleRemovedError(schedule string) string {
	return "schedule " + schedule + " removed"
}
