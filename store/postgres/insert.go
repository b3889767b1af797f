package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/rotahq/rota/store"
)

// copyMinRows is the batch size from which jobs without a unique key are inserted with COPY.
// Below it one multi-row INSERT is faster: COPY costs two more round trips (the id block and
// the table's column types).
const copyMinRows = 200

// maxRowsPerStatement bounds the jobs of one multi-row INSERT, which database/sql transactions
// use for batches of any size (they cannot COPY): the arrays of a statement are built in memory
// on both sides.
const maxRowsPerStatement = 5000

// Insert adds jobs in one transaction. Small batches without unique keys, and single jobs, are
// one statement; large batches go through COPY; jobs with dependencies or in a workflow take
// the dependency path (insertDeps).
func (s *Store) Insert(ctx context.Context, params []store.InsertParams) ([]store.InsertResult, error) {
	if len(params) == 0 {
		return nil, nil
	}
	var res []store.InsertResult
	var owed []string
	var err error
	if oneStatement(params) {
		res, err = s.insert(ctx, pgxQuerier{c: s.pool, owed: &owed}, params)
	} else {
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			res, err = s.insert(ctx, pgxQuerier{c: tx, canCopy: true, owed: &owed}, params)
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: insert: %w", unavailable(err))
	}
	s.gate.owe(owed)
	s.announceLocally(res)
	return res, nil
}

// oneStatement reports whether params need no transaction of their own: plain jobs below the COPY
// threshold go in one statement, and a single job that supersedes nothing makes one write at
// most (its insert), whatever the reads after a conflict.
func oneStatement(params []store.InsertParams) bool {
	if slices.ContainsFunc(params, usesDeps) {
		return false
	}
	if len(params) == 1 {
		return !params[0].Supersede || params[0].UniqueKey == ""
	}
	if len(params) >= copyMinRows {
		return false
	}
	for _, p := range params {
		if p.UniqueKey != "" {
			return false
		}
	}
	return true
}

// InsertTx adds jobs in the caller's transaction: a pgx.Tx, or a *sql.Tx of pgx's stdlib driver.
// They exist if and only if that transaction commits, and idle nodes are notified at its commit.
func (s *Store) InsertTx(ctx context.Context, tx any, params []store.InsertParams) ([]store.InsertResult, error) {
	var q querier
	switch tx := tx.(type) {
	case pgx.Tx:
		q = pgxQuerier{c: tx, canCopy: true}
	case *sql.Tx:
		q = sqlQuerier{tx: tx, m: pgtype.NewMap()}
	default:
		return nil, fmt.Errorf("postgres: insert: transaction of type %T, want pgx.Tx or *sql.Tx", tx)
	}
	if len(params) == 0 {
		return nil, nil
	}
	res, err := s.insert(ctx, q, params)
	if err != nil {
		return nil, fmt.Errorf("postgres: insert: %w", unavailable(err))
	}
	return res, nil
}

// insert inserts params through q, which is a transaction unless oneStatement(params).
//
// Unique keys are settled in rounds. Each round inserts the pending jobs in one statement that
// skips conflicts (ON CONFLICT DO NOTHING, which waits for a concurrent insert of the same key to
// commit or roll back). For a job that conflicted, the round looks up the job holding its key:
// the new job is a duplicate of it, or it supersedes it (cancels it) and tries again next round.
// A holder that left its unique states in between also sends the job to the next round.
func (s *Store) insert(ctx context.Context, q querier, params []store.InsertParams) ([]store.InsertResult, error) {
	if slices.ContainsFunc(params, usesDeps) {
		return s.insertDeps(ctx, q, params)
	}
	out := make([]store.InsertResult, len(params))
	var plain, pending []int
	for i, p := range params {
		if p.UniqueKey == "" {
			plain = append(plain, i)
		} else {
			pending = append(pending, i)
		}
	}
	if copyFrom := q.copyFrom(); copyFrom != nil && len(plain) >= copyMinRows {
		if err := s.copyInsert(ctx, q, copyFrom, params, plain, out); err != nil {
			return nil, err
		}
	} else if len(plain) > 0 {
		pending = append(plain, pending...)
		slices.Sort(pending)
	}

	inserted := make(map[int64]int) // job id -> index in out, to update jobs superseded in this call
	moved := false                  // a key moved between rounds: results may be stale
	maxRounds := 2*len(pending) + 8
	for round := 0; len(pending) > 0; round++ {
		if round == maxRounds {
			return nil, fmt.Errorf("unique keys still contended after %d rounds", round)
		}
		ids, now, err := s.insertRows(ctx, q, params, pending)
		if err != nil {
			return nil, err
		}
		var conflicted []int
		for k, i := range pending {
			if ids[k] == 0 {
				conflicted = append(conflicted, i)
				continue
			}
			out[i] = store.InsertResult{Job: newJob(params[i], ids[k], now)}
			if params[i].UniqueKey != "" {
				inserted[ids[k]] = i
			}
		}
		n := len(conflicted)
		pending, err = s.resolveConflicts(ctx, q, params, conflicted, out, inserted)
		if err != nil {
			return nil, err
		}
		// Fewer duplicates than conflicts: a key moved, by a supersede or a holder's end.
		moved = moved || n > 0 && len(pending) > 0
	}
	if moved {
		if err := s.rereadResults(ctx, q, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rereadResults reads again, once the call ended jobs (a supersede), the results it may have
// made stale: its duplicates, whose holder a later job of the call may have cancelled, and its
// new jobs that were pending, which a cancelled dependency ends or releases.
func (s *Store) rereadResults(ctx context.Context, q querier, out []store.InsertResult) error {
	at := make(map[int64][]int)
	var ids []int64
	for i, r := range out {
		if r.Job != nil && (r.Duplicate || r.Job.State == store.StatePending) {
			if _, ok := at[r.Job.ID]; !ok {
				ids = append(ids, r.Job.ID)
			}
			at[r.Job.ID] = append(at[r.Job.ID], i)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rs, err := q.query(ctx, s.sql(`SELECT `+jobColumns+` FROM {schema}.jobs WHERE id = ANY ($1::bigint[])`), ids)
	if err != nil {
		return err
	}
	rows, err := scanJobs(rs)
	if err != nil {
		return err
	}
	for _, j := range rows {
		for _, i := range at[j.ID] {
			out[i].Job = j
		}
	}
	return nil
}

// newJob is the row the insert of p with id at now created, built without reading it back.
func newJob(p store.InsertParams, id int64, now time.Time) *store.JobRow {
	j := &store.JobRow{
		ID: id, Kind: p.Kind, Queue: p.Queue, Args: jsonParam(p.Args), Priority: p.Priority,
		State: store.StateAvailable, MaxAttempts: p.MaxAttempts, RunAt: now,
		ExpiresAt: deref(ts(p.ExpiresAt)), UniqueKey: p.UniqueKey, Schedule: p.Schedule,
		Metadata: jsonParam(p.Metadata), CreatedAt: now,
	}
	if len(p.Tags) > 0 {
		j.Tags = slices.Clone(p.Tags)
	}
	if runAt := ts(p.RunAt); runAt != nil {
		j.RunAt = *runAt
		if runAt.After(now) {
			j.State = store.StateScheduled
		}
	}
	return j
}

const insertSQL = `
WITH params AS MATERIALIZED (
	SELECT nextval({jobs_id_seq}) AS id, p.*
	FROM unnest($2::text[], $3::text[], $4::json[], $5::integer[], $6::integer[],
		$7::timestamptz[], $8::timestamptz[], $9::json[], $10::json[], $11::text[], $12::json[], $14::text[])
		WITH ORDINALITY AS p(kind, queue, args, priority, max_attempts, run_at, expires_at, tags,
			metadata, unique_key, unique_states, schedule, ord)
),
inserted AS (
	INSERT INTO {schema}.jobs (id, kind, queue, args, priority, state, max_attempts, run_at,
		expires_at, tags, metadata, unique_key, unique_states, schedule, created_at)
	SELECT id, kind, queue, args, priority,
		CASE WHEN run_at IS NULL OR run_at <= {now} THEN 'available' ELSE 'scheduled' END,
		max_attempts, coalesce(run_at, {now}), expires_at,
		CASE WHEN tags IS NULL THEN '{}' ELSE ARRAY(SELECT json_array_elements_text(tags)) END,
		metadata, unique_key,
		CASE WHEN unique_key IS NOT NULL THEN ARRAY(SELECT json_array_elements_text(unique_states)) END,
		schedule, {now}
	FROM params
	ORDER BY ord
	{on_conflict}
	RETURNING id, queue, state
)
SELECT {now},
	ARRAY(SELECT coalesce(i.id, 0) FROM params p LEFT JOIN inserted i ON i.id = p.id ORDER BY p.ord),
	(SELECT count(pg_notify({insert_channel}, {origin} || queue)) FROM (
		SELECT DISTINCT queue FROM inserted WHERE state = 'available' AND queue = ANY ($13::text[])) q)`

// insertOneSQL is insertSQL for one job: the single-job insert is the commonest call, and a plain
// VALUES row plans and runs in a fraction of the unnest.
const insertOneSQL = `
WITH inserted AS (
	INSERT INTO {schema}.jobs (kind, queue, args, priority, state, max_attempts, run_at, expires_at,
		tags, metadata, unique_key, unique_states, schedule, created_at)
	VALUES ($2, $3, $4, $5,
		CASE WHEN $7::timestamptz IS NULL OR $7::timestamptz <= {now} THEN 'available' ELSE 'scheduled' END,
		$6, coalesce($7::timestamptz, {now}), $8, coalesce($9::text[], '{}'), $10, $11, $12, $14, {now})
	{on_conflict}
	RETURNING id, queue, state
)
SELECT {now}, coalesce((SELECT id FROM inserted), 0),
	(SELECT count(pg_notify({insert_channel}, {origin} || queue)) FROM inserted
		WHERE state = 'available' AND queue = ANY ($13::text[]))`

// insertSQL renders an insert statement. Only inserts with unique keys skip conflicts: ON
// CONFLICT makes every row a speculative insertion, work a job without a key does not need.
func (s *Store) insertSQL(q querier, text string, unique bool) string {
	conflict := ""
	if unique {
		conflict = "ON CONFLICT DO NOTHING"
	}
	return s.insertText(q, strings.Replace(text, "{on_conflict}", conflict, 1))
}

// insertText is sql for a statement that NOTIFYs inserts: only those that Insert announces
// locally carry this Store's origin (see parseInsertPayload); the others must reach its
// subscribers through the listener.
func (s *Store) insertText(q querier, text string) string {
	if q.heldBack() == nil {
		text = strings.ReplaceAll(text, "{origin} || ", "")
	}
	return s.sql(text)
}

// notifyNow returns which of the queues an insert made work due in its own statement NOTIFYs.
// Insert's go through the gate, which sends the rest after Insert committed; Insert wakes this
// Store's subscribers itself. Inserts in a caller's transaction (InsertTx) and the cron
// planner's NOTIFY every queue at their commit: the Store cannot know when the caller commits,
// so a NOTIFY the gate sent later might arrive first, and nothing else tells this Store's own.
func (s *Store) notifyNow(q querier, due []string) []string {
	owed := q.heldBack()
	if owed == nil {
		return due
	}
	through, later := s.gate.take(due)
	*owed = append(*owed, later...)
	return through
}

// insertOne is insertRows for one job.
func (s *Store) insertOne(ctx context.Context, q querier, p store.InsertParams) (ids []int64, now time.Time, err error) {
	var uniqueKey *string
	var uniqueStates []string
	if p.UniqueKey != "" {
		uniqueKey = &p.UniqueKey
		uniqueStates = stateNames(p.UniqueStates)
	}
	var tags []string
	if len(p.Tags) > 0 {
		tags = p.Tags
	}
	notify := s.notifyNow(q, s.dueQueues([]store.InsertParams{p}, []int{0}))
	rs, err := q.query(ctx, s.insertSQL(q, insertOneSQL, uniqueKey != nil), s.now(), p.Kind, p.Queue, jsonParam(p.Args),
		int32(p.Priority), int32(p.MaxAttempts), ts(p.RunAt), ts(p.ExpiresAt), tags,
		jsonParam(p.Metadata), uniqueKey, uniqueStates, notify, textParam(p.Schedule))
	if err != nil {
		return nil, now, err
	}
	var id, notified int64
	if err := scanOne(rs, &now, &id, &notified); err != nil {
		return nil, now, err
	}
	return []int64{id}, now, nil
}

// stateNames are the unique states to store: store.UniqueStatesDefault when none are named.
func stateNames(states []store.State) []string {
	if len(states) == 0 {
		states = store.UniqueStatesDefault()
	}
	names := make([]string, len(states))
	for i, st := range states {
		names[i] = string(st)
	}
	return names
}

// scanOne reads the one row a statement returns and closes rs.
func scanOne(rs rows, dest ...any) error {
	defer rs.Close()
	if !rs.Next() {
		return errors.Join(rs.Err(), errors.New("statement returned no row"))
	}
	if err := rs.Scan(dest...); err != nil {
		return err
	}
	rs.Close()
	return rs.Err()
}

// insertRows inserts params[idx...] in one statement, skipping those whose unique key is held.
// ids[k] is the id of params[idx[k]], or 0 when it was skipped.
func (s *Store) insertRows(ctx context.Context, q querier, params []store.InsertParams, idx []int) (ids []int64, now time.Time, err error) {
	if len(idx) == 1 {
		return s.insertOne(ctx, q, params[idx[0]])
	}
	if len(idx) > maxRowsPerStatement {
		// Only in a transaction (see oneStatement), where now is the same for every statement.
		for chunk := range slices.Chunk(idx, maxRowsPerStatement) {
			chunkIDs, chunkNow, err := s.insertRows(ctx, q, params, chunk)
			if err != nil {
				return nil, now, err
			}
			ids, now = append(ids, chunkIDs...), chunkNow
		}
		return ids, now, nil
	}
	n := len(idx)
	var (
		kinds, queues        = make([]string, n), make([]string, n)
		args, metadata       = make([][]byte, n), make([][]byte, n)
		tags, uniqueStates   = make([][]byte, n), make([][]byte, n)
		priorities, attempts = make([]int32, n), make([]int32, n)
		runAts, expiresAts   = make([]*time.Time, n), make([]*time.Time, n)
		uniqueKeys           = make([]*string, n)
		schedules            = make([]*string, n)
	)
	for k, i := range idx {
		p := params[i]
		kinds[k], queues[k] = p.Kind, p.Queue
		args[k], metadata[k] = jsonParam(p.Args), jsonParam(p.Metadata)
		priorities[k], attempts[k] = int32(p.Priority), int32(p.MaxAttempts)
		runAts[k], expiresAts[k] = ts(p.RunAt), ts(p.ExpiresAt)
		schedules[k] = textParam(p.Schedule)
		if len(p.Tags) > 0 {
			if tags[k], err = json.Marshal(p.Tags); err != nil {
				return nil, now, err
			}
		}
		if p.UniqueKey != "" {
			uniqueKeys[k] = &p.UniqueKey
			if uniqueStates[k], err = json.Marshal(stateNames(p.UniqueStates)); err != nil {
				return nil, now, err
			}
		}
	}
	notify := s.notifyNow(q, s.dueQueues(params, idx))
	rs, err := q.query(ctx, s.insertSQL(q, insertSQL, slices.ContainsFunc(uniqueKeys, func(k *string) bool { return k != nil })),
		s.now(), kinds, queues, args, priorities, attempts,
		runAts, expiresAts, tags, metadata, uniqueKeys, uniqueStates, notify, schedules)
	if err != nil {
		return nil, now, err
	}
	var notified int64
	if err := scanOne(rs, &now, &ids, &notified); err != nil {
		return nil, now, err
	}
	if len(ids) != n {
		return nil, now, fmt.Errorf("insert returned %d ids for %d jobs", len(ids), n)
	}
	return ids, now, nil
}

// dueQueues are the queues of params[idx...] that get a job to run now, as far as this process
// can tell: the statement checks again against the store's clock.
func (s *Store) dueQueues(params []store.InsertParams, idx []int) []string {
	now := s.localNow()
	var queues []string
	seen := make(map[string]bool)
	for _, i := range idx {
		p := params[i]
		if (p.RunAt.IsZero() || !p.RunAt.After(now)) && !seen[p.Queue] {
			seen[p.Queue] = true
			queues = append(queues, p.Queue)
		}
	}
	return queues
}
