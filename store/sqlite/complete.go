package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/rotahq/rota/store"
)

// completeSQL returns the statement that applies n outcomes at once: each is joined to its job
// only while the job runs under the outcome's fence. An outcome that would run the job again ends
// it cancelled instead when a user asked to cancel it while it ran (the request reached the store
// after the node had let the job go); the last parameter is the time it is finalized then. An error is appended with the attempt number
// of that claim (the store knows it; the caller might not), before any refund. One statement
// instead of one per outcome, because a statement's fixed cost is most of a small update's.
func completeSQL(n int) string {
	return `WITH o (id, fence, state, run_at, refund, finalized_at, result, error) AS (VALUES ` +
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?), ", n), ", ") + `)
	UPDATE jobs SET
		state = CASE WHEN jobs.cancel_requested AND o.state IN ('retryable', 'scheduled', 'available')
			THEN 'cancelled' ELSE o.state END,
		run_at = coalesce(o.run_at, jobs.run_at),
		attempt = jobs.attempt - o.refund,
		finalized_at = CASE WHEN jobs.cancel_requested AND o.state IN ('retryable', 'scheduled', 'available')
			THEN ? ELSE o.finalized_at END,
		result = coalesce(o.result, jobs.result),
		errors = CASE WHEN o.error IS NULL THEN jobs.errors
			ELSE json_insert(coalesce(jobs.errors, '[]'), '$[#]', json_set(o.error, '$.attempt', jobs.attempt)) END,
		owner = NULL, lease_until = NULL
	FROM o
	WHERE jobs.id = o.id AND jobs.fence = o.fence AND jobs.state = 'running'
	RETURNING jobs.id, jobs.queue, jobs.state`
}

// completeChunk is the most outcomes one statement carries (8 parameters each).
const completeChunk = 100

var completeSQLs = func() []string {
	out := make([]string, completeChunk+1)
	for n := 1; n <= completeChunk; n++ {
		out[n] = completeSQL(n)
	}
	return out
}()

// Complete records outcomes in one group commit.
func (s *Store) Complete(ctx context.Context, outcomes []store.Outcome) ([]bool, error) {
	for _, o := range outcomes {
		switch o.State {
		case store.StateCompleted, store.StateRetryable, store.StateScheduled,
			store.StateAvailable, store.StateCancelled, store.StateDiscarded:
		default:
			return nil, fmt.Errorf("sqlite: complete: job %d: %q is not an outcome state", o.ID, o.State)
		}
	}
	applied := make([]bool, len(outcomes))
	queues := make([]string, len(outcomes))      // of the applied outcomes' jobs
	states := make([]store.State, len(outcomes)) // the states they ended in
	err := s.write(ctx, func(t *wtx) error {
		clear(applied)
		// One statement can apply one outcome per job; more than one for a job is applied in
		// order, one statement each, so that the first wins as the contract says.
		seen := make(map[int64]bool, len(outcomes))
		start := 0
		for i, o := range outcomes {
			if seen[o.ID] {
				if err := complete(t, outcomes[start:i], applied[start:i], queues[start:i], states[start:i]); err != nil {
					return err
				}
				clear(seen)
				start = i
			}
			seen[o.ID] = true
		}
		if err := complete(t, outcomes[start:], applied[start:], queues[start:], states[start:]); err != nil {
			return err
		}
		c := make(counts)
		for i, ok := range applied {
			if ok {
				c.move(queues[i], store.StateRunning, states[i], 1)
			}
		}
		return c.flush(t)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: complete: %w", err)
	}
	return applied, nil
}

// complete applies outcomes, whose ids are distinct, and sets applied and the queues and end
// states of the applied ones.
func complete(t *wtx, outcomes []store.Outcome, applied []bool, queues []string, states []store.State) error {
	for len(outcomes) > completeChunk {
		if err := complete(t, outcomes[:completeChunk], applied[:completeChunk], queues[:completeChunk], states[:completeChunk]); err != nil {
			return err
		}
		outcomes, applied, queues, states = outcomes[completeChunk:], applied[completeChunk:], queues[completeChunk:], states[completeChunk:]
	}
	if len(outcomes) == 0 {
		return nil
	}
	now := micros(t.now)
	args := make([]any, 0, 8*len(outcomes))
	runAts := make([]any, len(outcomes))
	index := make(map[int64]int, len(outcomes))
	for i := range outcomes {
		o := &outcomes[i]
		var runAt, finalized, result, errJSON any
		switch o.State {
		case store.StateRetryable, store.StateScheduled:
			runAt = now
			if !o.RunAt.IsZero() {
				runAt = micros(o.RunAt)
			}
		case store.StateAvailable:
			runAt = nullMicros(o.RunAt) // zero keeps the old RunAt: first in line
		default:
			finalized = now
		}
		refund := 0
		if o.RefundAttempt {
			refund = 1
		}
		if o.Result != nil {
			result = string(o.Result)
		}
		if o.Error != nil {
			e := store.PortableError(*o.Error)
			if e.At.IsZero() {
				e.At = t.now
			}
			e.At = e.At.UTC()
			errJSON = jsonText(e)
		}
		args = append(args, o.ID, o.Fence, string(o.State), runAt, refund, finalized, result, errJSON)
		runAts[i] = runAt
		index[o.ID] = i
	}
	rows, err := t.query(completeSQLs[len(outcomes)], append(args, now)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var queue, state string
		if err := rows.Scan(&id, &queue, &state); err != nil {
			return err
		}
		i := index[id]
		applied[i], queues[i], states[i] = true, queue, store.State(state)
		switch at := runAts[i]; {
		case states[i].Final():
			t.notify(store.Notification{Topic: store.TopicFinal, Queue: queue, JobID: id})
		case at == nil || at.(int64) <= now:
			t.notify(store.Notification{Topic: store.TopicInsert, Queue: queue})
		}
	}
	return rows.Err()
}
