package postgres

import (
	"context"
	"slices"
	"time"

	"github.com/rotahq/rota/store"
)

// Unique keys. A job holds its unique key while its state is in its own unique_states; the
// partial unique index jobs_unique_key holds exactly those jobs, so of concurrent inserts of one
// key exactly one wins, and the others conflict and find the winner (see Store.insert).
//
// When inserts of one key name different UniqueStates, the holder's own states decide whether
// it still holds the key, not the newer insert's: keep UniqueStates the same for a key.

const lookupHoldersSQL = `SELECT ` + jobColumns + ` FROM {schema}.jobs
	WHERE unique_key = ANY ($1::text[]) AND state = ANY (unique_states)`

// supersedeSQL cancels the jobs $2 so that newer ones can take their keys. A job that is running
// cannot be cancelled: it runs on, but gives up its key (its unique_states empty, it leaves the
// unique index) so that the newer job can be inserted. The holders were read without a lock: one
// that no longer holds its key when this UPDATE gets its row (it ended, and was then retried
// without it) is left alone, as its state against its unique_states, checked on the row, says.
var supersedeSQL = `
WITH superseded AS (
	UPDATE {schema}.jobs SET
		state = CASE WHEN state = 'running' THEN state ELSE 'cancelled' END,
		finalized_at = CASE WHEN state = 'running' THEN finalized_at ELSE {now} END,
		unique_states = CASE WHEN state = 'running' THEN '{}' ELSE unique_states END
	WHERE id = ANY ($2::bigint[]) AND state IN ('scheduled', 'pending', 'available', 'retryable', 'running')
		AND state = ANY (unique_states)
	RETURNING id, state, queue
)
SELECT {now}, ARRAY(SELECT id FROM superseded WHERE state = 'cancelled'), ` + finalNotify("superseded")

// lookupHolders returns the jobs that hold keys now, by key.
func (s *Store) lookupHolders(ctx context.Context, q querier, keys []string) (map[string]*store.JobRow, error) {
	rs, err := q.query(ctx, s.sql(lookupHoldersSQL), keys)
	if err != nil {
		return nil, err
	}
	found, err := scanJobs(rs)
	if err != nil {
		return nil, err
	}
	holders := make(map[string]*store.JobRow, len(found))
	for _, j := range found {
		holders[j.UniqueKey] = j
	}
	return holders, nil
}

// resolveConflicts settles the unique jobs whose insert conflicted and returns those to try
// again next round.
func (s *Store) resolveConflicts(ctx context.Context, q querier, params []store.InsertParams,
	conflicted []int, out []store.InsertResult, inserted map[int64]int,
) (retry []int, err error) {
	if len(conflicted) == 0 {
		return nil, nil
	}
	var keys []string
	for _, i := range conflicted {
		if !slices.Contains(keys, params[i].UniqueKey) {
			keys = append(keys, params[i].UniqueKey)
		}
	}
	holders, err := s.lookupHolders(ctx, q, keys)
	if err != nil {
		return nil, err
	}

	// The first job of the round, by its place in the call, that supersedes each key's holder:
	// a later job of the key is that job's duplicate, next round, not the holder's.
	first := make(map[string]int)
	for _, i := range conflicted {
		p := params[i]
		if h := holders[p.UniqueKey]; h != nil && p.Supersede && supersedable(h.State) {
			if k, ok := first[p.UniqueKey]; !ok || i < k {
				first[p.UniqueKey] = i
			}
		}
	}
	var supersede []int64
	for _, i := range conflicted {
		p := params[i]
		h := holders[p.UniqueKey]
		k, superseded := first[p.UniqueKey]
		switch {
		case h == nil: // the holder finished meanwhile: the key is free
			retry = append(retry, i)
		case p.Supersede && supersedable(h.State):
			if !slices.Contains(supersede, h.ID) {
				supersede = append(supersede, h.ID)
			}
			retry = append(retry, i)
		case superseded && k < i:
			retry = append(retry, i)
		default:
			out[i] = store.InsertResult{Job: h, Duplicate: true}
		}
	}
	if len(supersede) == 0 {
		return retry, nil
	}
	slices.Sort(supersede)
	rs, err := q.query(ctx, s.sql(supersedeSQL), s.now(), supersede)
	if err != nil {
		return nil, err
	}
	var (
		now       time.Time
		cancelled []int64
		notified  int64
	)
	if err := scanOne(rs, &now, &cancelled, &notified); err != nil {
		return nil, err
	}
	// A job this call inserted and then superseded is reported as it now is.
	for _, id := range cancelled {
		if k, ok := inserted[id]; ok {
			out[k].Job.State, out[k].Job.FinalizedAt = store.StateCancelled, now
		}
	}
	return retry, nil
}

// supersedable reports whether a job in state may be replaced by a newer one: it is not final.
// A final job that holds its key (its UniqueStates name a final state) stays the answer.
func supersedable(state store.State) bool {
	return !state.Final()
}

// keepKeyIf is the SQL of a job's unique_states as it moves into state (an SQL expression, over
// the row's old values): a job that did not hold its key and now would, while another job holds
// it, gives the key up instead, as a superseded running job does. Without this the unique index
// refused the move (a job back from running, rescued or retried after a newer job took its
// key), and the statement failed with every outcome or rescue in it.
func keepKeyIf(state string) string { return keepKeyAmong(state, "") }

// keepKeyAmong is keepKeyIf for a statement that may move several jobs of one key into states
// that hold it: none sees the others' moves, so each would keep the key and the statement
// would fail on the index (a claim's promotion failing so failed every claim of its queue).
// peers is an SQL condition over p, a job of the key that the statement moves and that would
// hold the key after; of those, the one with the smallest id keeps it. A peer the statement
// ends up not moving (past a LIMIT, locked by another claim) still makes the job give its key
// up: the key is then held by none, the price of a rare race.
func keepKeyAmong(state, peers string) string {
	const j = "{schema}.jobs."
	free := `NOT EXISTS (SELECT 1 FROM {schema}.jobs h WHERE h.unique_key = ` + j + `unique_key
				AND h.id <> ` + j + `id AND h.state = ANY (h.unique_states))`
	if peers != "" {
		free += ` AND NOT EXISTS (SELECT 1 FROM {schema}.jobs p WHERE p.unique_key = ` + j + `unique_key
				AND p.id < ` + j + `id AND (` + peers + `))`
	}
	return `CASE WHEN ` + j + `unique_key IS NULL OR ` + state + ` <> ALL (` + j + `unique_states)
			OR ` + j + `state = ANY (` + j + `unique_states)
			OR (` + free + `)
		THEN ` + j + `unique_states ELSE '{}' END`
}
