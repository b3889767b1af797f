// Package outcome holds what every store does with the outcomes Complete is given before any of
// them is written: refusing a state no attempt ends in, deciding what a zero RunAt means, and
// splitting a call that holds several outcomes of one job into rounds that a single statement
// each can apply. It never reads or writes a store; the statements are the store's.
package outcome

import (
	"fmt"
	"time"

	"github.com/rotahq/rota/store"
)

// Validate refuses outcomes whose State is not one an attempt can end in (completed, retryable,
// scheduled, available, cancelled, discarded; see store.Outcome). Nothing is written then: a
// store would otherwise leave a job running with no owner, or expired after it ran, which no
// node and no rescue ever looks at again.
func Validate(outcomes []store.Outcome) error {
	for _, o := range outcomes {
		switch o.State {
		case store.StateCompleted, store.StateRetryable, store.StateScheduled,
			store.StateAvailable, store.StateCancelled, store.StateDiscarded:
		default:
			return fmt.Errorf("job %d: %q is not an outcome state", o.ID, o.State)
		}
	}
	return nil
}

// Bare reports whether o completes its job and carries nothing else: no result, error or
// refund (a completed outcome's RunAt means nothing, see RunAt). Nearly every outcome of a busy
// node is bare, and the stores write bare ones with less than the general outcome needs.
func Bare(o *store.Outcome) bool {
	return o.State == store.StateCompleted && len(o.Result) == 0 && o.Error == nil && !o.RefundAttempt
}

// RunAt is the RunAt that o gives its job: at when it is set; the store's own now when now is
// true; the job's RunAt unchanged when neither. A retryable or scheduled outcome without a RunAt
// makes the job due now, as an insert without one does. A job handed back (available) without
// one stays first in line. A final outcome keeps the time the job last ran from, whatever it
// carries: nothing runs the job at it.
func RunAt(o store.Outcome) (at time.Time, now bool) {
	switch o.State {
	case store.StateRetryable, store.StateScheduled:
		return o.RunAt, o.RunAt.IsZero()
	case store.StateAvailable:
		return o.RunAt, false
	}
	return time.Time{}, false
}

// Rounds splits outcomes into rounds, each a list of indexes into outcomes naming distinct jobs:
// the first outcome of every job in the first round, the second of every job that has one in
// the second, and so on. A store applies the rounds in order, one statement each (a statement
// changes a row once), so a job's outcomes are applied in the order of the call, and a later one
// finds the job no longer running under its fence when an earlier one was applied. Most calls
// hold one outcome per job and make one round.
func Rounds(outcomes []store.Outcome) [][]int {
	var rounds [][]int
	seen := make(map[int64]int, len(outcomes)) // job id -> outcomes of it placed so far
	for i, o := range outcomes {
		r := seen[o.ID]
		seen[o.ID] = r + 1
		if r == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[r] = append(rounds[r], i)
	}
	return rounds
}
