package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/outcome"
)

// completeSQL returns the statement that applies n outcomes at once: each is joined to its job
// only while the job runs under the outcome's fence. Each outcome comes with two endings, the
// state it asks for and the one it leaves when a user asked to cancel the job while it ran
// (store.CancelRequestedState), each with its finalized time; the statement picks by the job's
// cancel_requested, read under the write lock. An error is appended with the attempt number,
// owner and running time of that claim (the store knows them; the caller might not), before any
// refund; the store's now, for the running time, is the one parameter after the outcomes'. One statement
// instead of one per outcome, because a statement's fixed cost is most of a small update's.
func completeSQL(n int) string {
	now := fmt.Sprintf("?%d", completeColumns*n+1)
	return `WITH o (id, fence, state, cancel_state, run_at, refund, finalized_at, cancel_finalized_at,
		result, error) AS (VALUES ` +
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?), ", n), ", ") + `)
	UPDATE jobs SET
		state = CASE WHEN jobs.cancel_requested THEN o.cancel_state ELSE o.state END,
		run_at = coalesce(o.run_at, jobs.run_at),
		attempt = jobs.attempt - o.refund,
		finalized_at = CASE WHEN jobs.cancel_requested THEN o.cancel_finalized_at ELSE o.finalized_at END,
		result = coalesce(o.result, jobs.result),
		errors = CASE WHEN o.error IS NULL THEN jobs.errors
			ELSE json_insert(coalesce(jobs.errors, '[]'), '$[#]', json_set(o.error, '$.attempt', jobs.attempt,
				'$.node', jobs.owner, '$.duration_ns', (` + now + ` - jobs.attempted_at) * 1000)) END,
		owner = NULL, lease_until = NULL
	FROM o
	WHERE jobs.id = o.id AND jobs.fence = o.fence AND jobs.state = 'running'
	RETURNING jobs.id, jobs.queue, jobs.state, jobs.has_dependents`
}

// completeColumns is how many parameters one outcome takes in completeSQL.
const completeColumns = 10

// completeChunk is the most outcomes one statement carries, one of literalSizes.
const completeChunk = 96

// completeSQLs[n] is completeSQL(n) for each of literalSizes up to completeChunk: a write of
// another size is made of pieces of those (piece). Each text the writer prepares holds about
// 36 KB for as long as the store is open, and a busy node's completion writes come in every size:
// one text per size up to 100 could hold ~3.6 MB, met a size at a time over hours.
var completeSQLs = bySize(completeChunk, completeSQL)

// completedSQL returns the statement that applies n bare completions at once: an outcome that
// completes its job with no result, error or refund, as nearly every outcome of a busy node
// does. It is completeSQL with what such an outcome leaves alone taken out: completed is its own
// state under a cancel request, and its run_at, attempt, result and errors stay. Two parameters
// an outcome, not ten, and no expression per row: binding and reading the ten, and the CASEs
// and coalesces they feed, cost as much as the update itself. The store's now is ?(2n+1).
func completedSQL(n int) string {
	return `WITH o (id, fence) AS (VALUES ` +
		strings.TrimSuffix(strings.Repeat("(?, ?), ", n), ", ") + `)
	UPDATE jobs SET state = 'completed', finalized_at = ?` + strconv.Itoa(2*n+1) + `, owner = NULL, lease_until = NULL
	FROM o
	WHERE jobs.id = o.id AND jobs.fence = o.fence AND jobs.state = 'running'
	RETURNING jobs.id, jobs.queue, jobs.state, jobs.has_dependents`
}

// completedSQLs[n] is completedSQL(n), as completeSQLs is completeSQL.
var completedSQLs = bySize(completeChunk, completedSQL)

// Complete records outcomes in one group commit. The dependents of the jobs they end are
// resolved in it up to the store's settle batch, the rest in further transactions before
// Complete returns (settle.go).
func (s *Store) Complete(ctx context.Context, outcomes []store.Outcome) ([]bool, error) {
	if err := outcome.Validate(outcomes); err != nil {
		return nil, fmt.Errorf("sqlite: complete: %w", err)
	}
	rounds := outcome.Rounds(outcomes)
	applied := make([]bool, len(outcomes))
	queues := make([]string, len(outcomes))      // of the applied outcomes' jobs
	states := make([]store.State, len(outcomes)) // the states they ended in
	var parked bool
	err := s.write(ctx, func(t *wtx) error {
		clear(applied)
		var ends []ended
		for _, round := range rounds {
			for len(round) > 0 {
				n := piece(min(len(round), completeChunk))
				if err := complete(t, outcomes, round[:n], applied, queues, states, &ends); err != nil {
					return err
				}
				round = round[n:]
			}
		}
		var err error
		if parked, err = resolveBounded(t, ends...); err != nil {
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
	if parked && !s.leaveParked {
		s.afterParked(ctx, "complete")
	}
	return applied, nil
}

// complete applies the outcomes idx names, whose jobs are distinct, in one statement, and sets
// applied and the queues and end states of the applied ones; the final ones that have dependents
// go to ends.
func complete(t *wtx, outcomes []store.Outcome, idx []int, applied []bool, queues []string, states []store.State, ends *[]ended) error {
	now := micros(t.now)
	index := make(map[int64]int, len(idx))
	allBare := true
	for _, i := range idx {
		allBare = allBare && outcome.Bare(&outcomes[i])
	}
	if allBare {
		args := make([]any, 0, 2*len(idx)+1)
		for _, i := range idx {
			o := &outcomes[i]
			args = append(args, o.ID, o.Fence)
			index[o.ID] = i
		}
		return applyOutcomes(t, completedSQLs[len(idx)], append(args, now), index, nil, now, applied, queues, states, ends)
	}
	args := make([]any, 0, completeColumns*len(idx)+1)
	runAts := make(map[int64]any, len(idx))
	for _, i := range idx {
		o := &outcomes[i]
		var runAt, result, errJSON any
		if at, dueNow := outcome.RunAt(*o); dueNow {
			runAt = now
		} else {
			runAt = nullMicros(at)
		}
		cancelState := store.CancelRequestedState(o.State)
		refund := 0
		if o.RefundAttempt {
			refund = 1
		}
		if o.Result != nil {
			result = string(jsonResult(o.Result))
		}
		if o.Error != nil {
			e := store.PortableError(*o.Error)
			if e.At.IsZero() {
				e.At = t.now
			}
			e.At = truncate(e.At) // to the microsecond, in UTC, as every time the store keeps
			errJSON = jsonText(e)
		}
		args = append(args, o.ID, o.Fence, string(o.State), string(cancelState), runAt, refund,
			finalizedAt(o.State, now), finalizedAt(cancelState, now), result, errJSON)
		runAts[o.ID] = runAt
		index[o.ID] = i
	}
	return applyOutcomes(t, completeSQLs[len(idx)], append(args, now), index, runAts, now, applied, queues, states, ends)
}

// applyOutcomes runs a completion statement and records what it applied: index maps a job's id to
// its outcome, runAts (nil for bare completions, which end final) to the run_at it was given.
func applyOutcomes(t *wtx, query string, args []any, index map[int64]int, runAts map[int64]any, now int64,
	applied []bool, queues []string, states []store.State, ends *[]ended) error {
	rows, err := t.query(query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	// Scan's destinations escape: declared once, not once per row.
	var (
		id           int64
		queue, state string
		dependents   bool
	)
	for rows.Next() {
		if err := rows.Scan(&id, &queue, &state, &dependents); err != nil {
			return err
		}
		i := index[id]
		applied[i], queues[i], states[i] = true, queue, store.State(state)
		if dependents && states[i].Final() {
			*ends = append(*ends, ended{id: id, state: states[i]})
		}
		switch at := runAts[id]; {
		case states[i].Final():
			t.notify(store.Notification{Topic: store.TopicFinal, Queue: queue, JobID: id})
		case at == nil || at.(int64) <= now:
			t.notify(store.Notification{Topic: store.TopicInsert, Queue: queue})
		}
	}
	return rows.Err()
}

// finalizedAt is the finalized_at of a job that ends in state at now: now for a final state,
// NULL otherwise.
func finalizedAt(state store.State, now int64) any {
	if state.Final() {
		return now
	}
	return nil
}

// jsonResult is a result as the store keeps it: JSON as given, anything else as a JSON string of
// its bytes, as PostgreSQL and Redis keep it, so that every JobRow can be encoded.
func jsonResult(b []byte) []byte {
	if len(b) == 0 || json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}
