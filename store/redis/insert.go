package redis

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/ids"
)

// insertChunk bounds the jobs of one insert script: a script blocks every client of the Redis
// while it runs, about 11 µs per job. Larger calls send several scripts in one MULTI/EXEC, so
// they stay all-or-nothing and nothing interleaves with them.
const insertChunk = 1000

// Insert adds jobs in one script, or for more than insertChunk jobs in one transaction of
// several. Unique keys are settled inside the script, in the order of params. Small calls that
// arrive while another is in flight share the next script (see coalescer); each call's jobs
// stay together and in order. A call with dependencies goes alone, in one script however
// large (see hasDeps).
func (s *Store) Insert(ctx context.Context, params []store.InsertParams) ([]store.InsertResult, error) {
	if len(params) == 0 {
		return nil, nil
	}
	if !hasDeps(params) {
		if len(params) <= coalesceMax {
			return s.inserts.insert(ctx, params)
		}
		return s.insertNow(ctx, params)
	}
	for i, p := range params {
		for _, d := range p.DependsOnIndex {
			if d < 0 || d >= i {
				return nil, fmt.Errorf("redis: insert: job %d depends on index %d, not an earlier job of the call", i, d)
			}
		}
	}
	return s.insertNow(ctx, params)
}

// insertNow is Insert without coalescing.
func (s *Store) insertNow(ctx context.Context, params []store.InsertParams) ([]store.InsertResult, error) {
	var replies []any
	if len(params) <= insertChunk || hasDeps(params) {
		sc, args := scriptInsert, []any(nil)
		if oneRun(params) {
			sc, args = scriptInsertRun, insertRunArgs(s.origin, params)
		} else {
			args = insertArgs(s.origin, params)
		}
		v, err := s.run(ctx, sc, args...)
		if err != nil {
			return nil, err
		}
		replies = []any{v}
	} else {
		var parked bool
		var err error
		if replies, parked, err = s.insertTx(ctx, params); err != nil {
			return nil, err
		}
		if parked { // what the superseded jobs' ends left
			s.afterParked(ctx, scriptInsert)
		}
	}
	out := make([]store.InsertResult, 0, len(params))
	cancelled := make(map[int64]bool)
	var now string
	for c, v := range replies {
		chunk := params
		if len(replies) > 1 {
			chunk = params[c*insertChunk : min((c+1)*insertChunk, len(params))]
		}
		res, nowS, gone, err := decodeInsert(v, chunk)
		if err != nil {
			return nil, fmt.Errorf("redis: insert: %w", err)
		}
		out, now = append(out, res...), nowS
		for _, id := range gone {
			cancelled[id] = true
		}
	}
	// A job this call inserted and then superseded is reported as it now is.
	if len(cancelled) > 0 {
		at, _ := fromMicros(now)
		for _, r := range out {
			if !r.Duplicate && cancelled[r.Job.ID] {
				r.Job.State, r.Job.FinalizedAt = store.StateCancelled, at
			}
		}
	}
	s.announceLocally(out)
	return out, nil
}

// insertTx runs the chunks of a large insert in one MULTI/EXEC and returns their replies and
// whether any left dependents parked.
func (s *Store) insertTx(ctx context.Context, params []store.InsertParams) ([]any, bool, error) {
	var calls [][]any
	for i := 0; i < len(params); i += insertChunk {
		calls = append(calls, insertArgs(s.origin, params[i:min(i+insertChunk, len(params))]))
	}
	return s.multi(ctx, scriptInsert, "insert", calls)
}

// insertArgs is the insert script's ARGV: origin, count, then the jobs (appendJobs).
func insertArgs(origin string, params []store.InsertParams) []any {
	return appendJobs(append(make([]any, 0, 2+len(params)+9), origin, len(params)), params)
}

// insertRunArgs is the insertrun script's ARGV: origin, the fields the jobs share (as a run of
// appendJobs has them), then each job's args. It leaves out what insert's needs to tell runs
// apart: each argument costs Redis ~0.8 µs to turn into Lua, and a call of one job is mostly
// such fixed costs.
func insertRunArgs(origin string, params []store.InsertParams) []any {
	return appendRunArgs(appendRunFields(make([]any, 0, 8+len(params)), params[0], origin), params)
}

// appendRunFields appends the fields a run of plain jobs shares, taken from p, after prefix (a
// run record's marker, or the insertrun script's origin); the count, when the record has one,
// goes after them.
func appendRunFields(args []any, p store.InsertParams, prefix string) []any {
	return append(args, prefix, p.Kind, p.Queue, strconv.Itoa(p.Priority), strconv.Itoa(p.MaxAttempts),
		microsOrEmpty(p.RunAt), tagsArg(p.Tags), []byte(p.Metadata))
}

// appendRunArgs appends the args of each job of a run.
func appendRunArgs(args []any, run []store.InsertParams) []any {
	for _, q := range run {
		args = append(args, []byte(q.Args))
	}
	return args
}

// appendJobs appends jobs as insertlib.lua's insertJobs reads them: a run of plain jobs alike
// but for their args as 'P', the fields they share, the count and each job's args; any other
// job as 'J' and its fields (appendJob).
func appendJobs(args []any, params []store.InsertParams) []any {
	for i := 0; i < len(params); {
		p := params[i]
		if !plain(p) {
			args = appendJob(append(args, "J"), p)
			i++
			continue
		}
		j := i + 1
		for j < len(params) && plain(params[j]) && sameRun(p, params[j]) {
			j++
		}
		args = appendRunArgs(append(appendRunFields(args, p, "P"), j-i), params[i:j])
		i = j
	}
	return args
}

// plain reports whether p goes in a run: no unique key, expiry, schedule or dependency fields.
func plain(p store.InsertParams) bool {
	return p.UniqueKey == "" && p.ExpiresAt.IsZero() && p.Schedule == "" && !depFields(p)
}

// oneRun reports whether params are one run of plain jobs (appendJobs), which the leaner
// insertrun script takes.
func oneRun(params []store.InsertParams) bool {
	for _, p := range params {
		if !plain(p) || !sameRun(params[0], p) {
			return false
		}
	}
	return true
}

// sameRun reports whether plain jobs p and q share every field a run sends once.
func sameRun(p, q store.InsertParams) bool {
	return p.Kind == q.Kind && p.Queue == q.Queue && p.Priority == q.Priority && p.MaxAttempts == q.MaxAttempts &&
		p.RunAt.Equal(q.RunAt) && slices.Equal(p.Tags, q.Tags) && bytes.Equal(p.Metadata, q.Metadata)
}

// tagsArg is a job's tags as the scripts store them: a JSON array, or empty for none.
func tagsArg(tags []string) string {
	if len(tags) == 0 {
		return ""
	}
	b, _ := json.Marshal(tags)
	return string(b)
}

// appendJob appends the fields of a job sent whole, as many as insertlib.lua's NF.
func appendJob(args []any, p store.InsertParams) []any {
	var ustates, supersede string
	if p.UniqueKey != "" {
		states := p.UniqueStates
		if len(states) == 0 {
			states = store.UniqueStatesDefault()
		}
		var b strings.Builder
		b.WriteByte(',')
		for _, st := range states {
			b.WriteString(string(st))
			b.WriteByte(',')
		}
		ustates = b.String()
		if p.Supersede {
			supersede = "1"
		}
	}
	return append(args, p.Kind, p.Queue, []byte(p.Args), strconv.Itoa(p.Priority), strconv.Itoa(p.MaxAttempts),
		microsOrEmpty(p.RunAt), microsOrEmpty(p.ExpiresAt), p.UniqueKey, ustates, supersede, p.Schedule,
		tagsArg(p.Tags), []byte(p.Metadata), depsArg(p))
}

// decodeInsert reads one insert script's reply {now, results, cancelled ids, first new id}
// (a result, per job sent whole, is a new job's id, or a flag and a row: a duplicate's holder,
// or a new job with dependency fields as the script wrote it), or insertrun's text "<now>
// <first new id>", and builds the rows of the other new jobs from their params: new jobs take
// ids one after another in the call's order.
func decodeInsert(v any, params []store.InsertParams) (res []store.InsertResult, now string, cancelled []int64, err error) {
	if s, ok := v.(string); ok {
		at, first, _ := strings.Cut(s, " ")
		v = []any{at, nil, nil, first}
	}
	r, _ := v.([]any)
	if len(r) != 4 {
		return nil, "", nil, fmt.Errorf("unexpected reply %v", v)
	}
	now = toStr(r[0])
	at, err := fromMicros(now)
	if err != nil {
		return nil, "", nil, err
	}
	list, _ := r[1].([]any)
	next, _ := strconv.ParseInt(toStr(r[3]), 10, 64) // the next new job's id
	for i, p := range params {
		var state string
		if !plain(p) {
			if len(list) == 0 {
				return nil, "", nil, fmt.Errorf("no result for job %d of the call", i)
			}
			w, err := decodeWhole(list[0])
			if err != nil {
				return nil, "", nil, fmt.Errorf("job %d of the call: %w", i, err)
			}
			list = list[1:]
			if w.row != nil { // a duplicate's holder, or a new job that ended cancelled
				if !w.dup {
					next = w.row.ID + 1
				}
				res = append(res, store.InsertResult{Job: w.row, Duplicate: w.dup})
				continue
			}
			if w.id != next {
				return nil, "", nil, fmt.Errorf("job %d of the call: new id %d, want %d", i, w.id, next)
			}
			state = w.state
		}
		res = append(res, store.InsertResult{Job: newRow(p, next, at, state, res)})
		next++
	}
	if len(list) != 0 {
		return nil, "", nil, fmt.Errorf("%d results left over", len(list))
	}
	gone, _ := r[2].([]any)
	for _, x := range gone {
		cancelled = append(cancelled, toInt(x))
	}
	return res, now, cancelled, nil
}

// whole is the insert script's result for a job sent whole: its row (a duplicate's holder, or
// a new job that ended cancelled), or a new job's id and, if it has dependency fields, the
// state the script gave it.
type whole struct {
	row   *store.JobRow
	dup   bool
	id    int64
	state string
}

func decodeWhole(x any) (whole, error) {
	idText := x
	var w whole
	if r, ok := x.([]any); ok {
		switch {
		case len(r) == 3 && toStr(r[0]) == "2":
			idText, w.state = r[1], toStr(r[2])
		case len(r) == 2:
			j, err := decodeJob(r[1])
			if err != nil || j == nil {
				return w, fmt.Errorf("row %v: %v", r[1], err)
			}
			w.row, w.dup = j, toStr(r[0]) == "1"
			return w, nil
		default:
			return w, fmt.Errorf("unexpected result %v", x)
		}
	}
	id, err := strconv.ParseInt(toStr(idText), 10, 64)
	if err != nil {
		return w, fmt.Errorf("unexpected result %v", x)
	}
	w.id = id
	return w, nil
}

// newRow is the row the insert script wrote for new job p: id, its time at, and the state it
// gave a job with dependency fields (empty for others); earlier holds the call's results so far,
// which DependsOnIndex names.
func newRow(p store.InsertParams, id int64, at time.Time, state string, earlier []store.InsertResult) *store.JobRow {
	j := &store.JobRow{
		ID: id, Kind: p.Kind, Queue: p.Queue, Args: p.Args, Priority: p.Priority,
		State: store.StateAvailable, MaxAttempts: p.MaxAttempts, RunAt: truncMicros(p.RunAt),
		ExpiresAt: truncMicros(p.ExpiresAt), UniqueKey: p.UniqueKey, Schedule: p.Schedule,
		Tags: p.Tags, Metadata: p.Metadata, CreatedAt: at,
	}
	// The script's rule: scheduled iff run_at is after its time, both in µs.
	if p.RunAt.IsZero() {
		j.RunAt = at
	} else if j.RunAt.After(at) {
		j.State = store.StateScheduled
	}
	if state != "" {
		// A job with dependency fields, in the state the script gave it, with what it wrote
		// from them (insertdeps.lua's waitOn).
		j.State = store.State(state)
		j.Workflow, j.Step, j.IgnoreFailedDeps = p.Workflow, p.Step, p.IgnoreFailedDeps
		named := slices.Clone(p.DependsOn)
		for _, k := range p.DependsOnIndex {
			named = append(named, earlier[k].Job.ID)
		}
		j.DependsOn = ids.Unique(named)
	}
	return j
}
