package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rotahq/rota/store"
)

// jobColumns is the column list every query that returns jobs selects, in rowScan's order;
// claims return claimedColumns instead.
const jobColumns = `id, kind, queue, args, priority, state, attempt, max_attempts, run_at,
	expires_at, unique_key, tags, metadata, errors, result, created_at, attempted_at,
	finalized_at, owner, lease_until, fence, cancel_requested, schedule, workflow, step, depends_on,
	ignore_failed_deps, attempted_by`

// claimedColumns is jobColumns for a claim's RETURNING: the five columns the claim itself sets
// to what it already knows (state, attempted_at, owner, lease_until, attempted_by) come back
// NULL, and scanClaimed fills them in. The driver fetches each column of each row through
// calls into SQLite that take its connection's mutex, a hundred rows a claim, and a text
// column costs three such calls and a copy.
const claimedColumns = `id, kind, queue, args, priority, NULL, attempt, max_attempts, run_at,
	expires_at, unique_key, tags, metadata, errors, result, created_at, NULL,
	finalized_at, NULL, NULL, fence, cancel_requested, schedule, workflow, step, depends_on,
	ignore_failed_deps, NULL`

// scanClaimed reads every row of a claim that returned claimedColumns, closes rows, and sets
// what the claim set: the jobs run for owner, under a lease until lease, attempted at now
// (microseconds, as the claim stored them).
func scanClaimed(rows *sql.Rows, owner string, lease, now int64) ([]*store.JobRow, error) {
	jobs, err := scanJobs(rows)
	for _, j := range jobs {
		j.State, j.Owner, j.AttemptedBy = store.StateRunning, owner, owner
		j.LeaseUntil, j.AttemptedAt = fromMicros(lease), fromMicros(now)
	}
	return jobs, err
}

// scanJobs reads every row and closes rows.
func scanJobs(rows *sql.Rows) ([]*store.JobRow, error) {
	defer rows.Close()
	var out []*store.JobRow
	v := newRowScan()
	for rows.Next() {
		j, err := v.scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// rowScan holds the destinations of one row's scan, which escape: scanJobs reuses one for every
// row of a claim rather than allocating them per row.
type rowScan struct {
	v, dest [28]any
}

func newRowScan() *rowScan {
	r := &rowScan{}
	for i := range r.v {
		r.dest[i] = &r.v[i]
	}
	return r
}

// scan reads one row of jobColumns (or claimedColumns). It scans into interface values and converts them itself:
// database/sql converts an integer column into an int field by formatting and parsing it, and
// claims read a hundred rows at a time.
func (r *rowScan) scan(rows *sql.Rows) (*store.JobRow, error) {
	if err := rows.Scan(r.dest[:]...); err != nil {
		return nil, err
	}
	v := &r.v
	j := &store.JobRow{
		ID: asInt(v[0]), Kind: asString(v[1]), Queue: asString(v[2]), Args: asJSON(v[3]),
		Priority: int(asInt(v[4])), State: store.State(asString(v[5])), Attempt: int(asInt(v[6])),
		MaxAttempts: int(asInt(v[7])), RunAt: asTime(v[8]), ExpiresAt: asTime(v[9]),
		UniqueKey: asString(v[10]), Metadata: asJSON(v[12]), Result: asJSON(v[14]),
		CreatedAt: asTime(v[15]), AttemptedAt: asTime(v[16]), FinalizedAt: asTime(v[17]),
		Owner: asString(v[18]), LeaseUntil: asTime(v[19]), Fence: asInt(v[20]),
		CancelRequested: asInt(v[21]) != 0, Schedule: asString(v[22]), Workflow: asString(v[23]),
		Step: asString(v[24]), IgnoreFailedDeps: asInt(v[26]) != 0, AttemptedBy: asString(v[27]),
	}
	if deps := asString(v[25]); deps != "" {
		var err error
		if j.DependsOn, err = parseIDs(deps); err != nil {
			return nil, fmt.Errorf("job %d: depends_on: %w", j.ID, err)
		}
	}
	if tags := asString(v[11]); tags != "" {
		if err := json.Unmarshal([]byte(tags), &j.Tags); err != nil {
			return nil, fmt.Errorf("job %d: tags: %w", j.ID, err)
		}
	}
	if errs := asString(v[13]); errs != "" {
		if err := json.Unmarshal([]byte(errs), &j.Errors); err != nil {
			return nil, fmt.Errorf("job %d: errors: %w", j.ID, err)
		}
	}
	return j, nil
}

// asInt, asString, asJSON and asTime convert what the driver returns for INTEGER, TEXT and NULL
// columns; NULL becomes the zero value.
func asInt(v any) int64 {
	n, _ := v.(int64)
	return n
}

func asString(v any) string {
	switch s := v.(type) {
	case string:
		return s
	case []byte:
		return string(s)
	}
	return ""
}

func asJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	return json.RawMessage(asString(v))
}

func asTime(v any) time.Time {
	if n, ok := v.(int64); ok {
		return fromMicros(n)
	}
	return time.Time{}
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// nullMicros stores the zero time as NULL.
func nullMicros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

// nullText stores an empty document as NULL.
func nullText[T ~[]byte | ~string](b T) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// truncate drops what the store cannot keep, so the row an insert returns equals what Get reads.
func truncate(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return fromMicros(t.UnixMicro())
}

// jsonText marshals v for a text column; v is always marshalable (strings, states, ids).
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("sqlite: marshal %T: %v", v, err))
	}
	return string(b)
}

// parseIDs reads a JSON array of ids, as depends_on holds them, without encoding/json: every
// claimed step of a workflow has one, and reflection costs more than the rest of its row.
func parseIDs(s string) ([]int64, error) {
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return nil, fmt.Errorf("not an array of ids: %.40q", s)
	}
	body := s[1 : len(s)-1]
	if strings.TrimSpace(body) == "" {
		return nil, nil
	}
	out := make([]int64, 0, strings.Count(body, ",")+1)
	for part := range strings.SplitSeq(body, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(part), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("not an array of ids: %.40q", s)
		}
		out = append(out, n)
	}
	return out, nil
}
