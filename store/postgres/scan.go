package postgres

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/rotahq/rota/store"
)

// jobColumns are the columns scanJob reads, in its order.
const jobColumns = `id, kind, queue, args, priority, state, attempt, max_attempts, run_at,
	expires_at, unique_key, tags, metadata, errors, result, created_at, attempted_at,
	finalized_at, owner, lease_until, fence, cancel_requested, schedule, workflow, step, depends_on,
	ignore_failed_deps, attempted_by`

// scanner is a row of pgx or of database/sql.
type scanner interface {
	Scan(dest ...any) error
}

// scanJob reads the jobColumns of one row.
func scanJob(r scanner) (*store.JobRow, error) {
	var (
		j                          store.JobRow
		state                      string
		args, metadata, result     []byte
		errs                       []byte
		expiresAt, attemptedAt     *time.Time
		finalizedAt, leaseUntil    *time.Time
		uniqueKey, owner, schedule *string
		attemptedBy                *string
		workflow, step             *string
		ignoreFailedDeps           *bool
		priority, attempt, maxAtts int32
	)
	err := r.Scan(&j.ID, &j.Kind, &j.Queue, &args, &priority, &state, &attempt, &maxAtts,
		&j.RunAt, &expiresAt, &uniqueKey, &j.Tags, &metadata, &errs, &result, &j.CreatedAt,
		&attemptedAt, &finalizedAt, &owner, &leaseUntil, &j.Fence, &j.CancelRequested, &schedule,
		&workflow, &step, &j.DependsOn, &ignoreFailedDeps, &attemptedBy)
	if err != nil {
		return nil, err
	}
	j.State = store.State(state)
	j.Priority, j.Attempt, j.MaxAttempts = int(priority), int(attempt), int(maxAtts)
	j.Args, j.Metadata, j.Result = args, metadata, result
	j.ExpiresAt, j.AttemptedAt = deref(expiresAt), deref(attemptedAt)
	j.FinalizedAt, j.LeaseUntil = deref(finalizedAt), deref(leaseUntil)
	j.UniqueKey, j.Owner, j.Schedule = deref(uniqueKey), deref(owner), deref(schedule)
	j.AttemptedBy = deref(attemptedBy)
	j.Workflow, j.Step, j.IgnoreFailedDeps = deref(workflow), deref(step), deref(ignoreFailedDeps)
	if len(j.Tags) == 0 {
		j.Tags = nil
	}
	if len(j.DependsOn) == 0 {
		j.DependsOn = nil
	}
	if len(errs) > 0 && string(errs) != "[]" {
		if err := json.Unmarshal(errs, &j.Errors); err != nil {
			return nil, fmt.Errorf("job %d: errors: %w", j.ID, err)
		}
	}
	return &j, nil
}

// rows is a result set of pgx or of database/sql.
type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// scanJobs reads every row of rs and closes it.
func scanJobs(rs rows) ([]*store.JobRow, error) {
	defer rs.Close()
	var jobs []*store.JobRow
	for rs.Next() {
		j, err := scanJob(rs)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, rs.Err()
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// ts is a time parameter: zero is NULL. Times are cut to microseconds, PostgreSQL's precision, so
// a row built in Go equals the row the database holds.
func ts(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.Truncate(time.Microsecond)
	return &t
}

// textParam is a text parameter: empty is NULL.
func textParam(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// jsonParam is a JSON parameter: empty is NULL.
func jsonParam(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}
