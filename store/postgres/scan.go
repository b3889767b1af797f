package postgres

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

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

// jobScan is where one row of jobColumns is scanned to. Scan's destinations escape, so locals
// would cost an allocation each, per row; these live in one value that scanJobs reuses for
// every row of a claim (pgx gives every row its own slices and strings, so nothing read is
// shared between rows). Nullable columns scan into pgtype values, which take a NULL or a time
// without allocating.
type jobScan struct {
	dest []any

	id, fence                                         int64
	kind, queue, state                                string
	args, metadata, errs, result                      []byte
	priority, attempt, maxAttempts                    int32
	runAt, createdAt                                  time.Time
	expiresAt, attemptedAt, finalizedAt, leaseUntil   pgtype.Timestamptz
	uniqueKey, owner, schedule, workflow, step, attBy pgtype.Text
	tags                                              []string
	dependsOn                                         []int64
	cancelRequested                                   bool
	ignoreFailedDeps                                  pgtype.Bool
}

func newJobScan() *jobScan {
	v := &jobScan{}
	v.dest = []any{&v.id, &v.kind, &v.queue, &v.args, &v.priority, &v.state, &v.attempt,
		&v.maxAttempts, &v.runAt, &v.expiresAt, &v.uniqueKey, &v.tags, &v.metadata, &v.errs,
		&v.result, &v.createdAt, &v.attemptedAt, &v.finalizedAt, &v.owner, &v.leaseUntil,
		&v.fence, &v.cancelRequested, &v.schedule, &v.workflow, &v.step, &v.dependsOn,
		&v.ignoreFailedDeps, &v.attBy}
	return v
}

// scan reads the jobColumns of the row r is on.
func (v *jobScan) scan(r scanner) (*store.JobRow, error) {
	if err := r.Scan(v.dest...); err != nil {
		return nil, err
	}
	j := &store.JobRow{
		ID: v.id, Kind: v.kind, Queue: v.queue, Args: v.args, Priority: int(v.priority),
		State: store.State(v.state), Attempt: int(v.attempt), MaxAttempts: int(v.maxAttempts),
		RunAt: v.runAt, ExpiresAt: timeOf(v.expiresAt), UniqueKey: v.uniqueKey.String,
		Metadata: v.metadata, Result: v.result, CreatedAt: v.createdAt,
		AttemptedAt: timeOf(v.attemptedAt), FinalizedAt: timeOf(v.finalizedAt), Owner: v.owner.String,
		LeaseUntil: timeOf(v.leaseUntil), Fence: v.fence, CancelRequested: v.cancelRequested,
		Schedule: v.schedule.String, Workflow: v.workflow.String, Step: v.step.String,
		IgnoreFailedDeps: v.ignoreFailedDeps.Bool, AttemptedBy: v.attBy.String,
	}
	if len(v.tags) > 0 {
		j.Tags = v.tags
	}
	if len(v.dependsOn) > 0 {
		j.DependsOn = v.dependsOn
	}
	if len(v.errs) > 0 && string(v.errs) != "[]" {
		if err := json.Unmarshal(v.errs, &j.Errors); err != nil {
			return nil, fmt.Errorf("job %d: errors: %w", j.ID, err)
		}
	}
	return j, nil
}

// timeOf is a nullable time as the store's rows hold it: zero for NULL.
func timeOf(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time
}

// scanJob reads the jobColumns of one row.
func scanJob(r scanner) (*store.JobRow, error) {
	return newJobScan().scan(r)
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
	v := newJobScan()
	for rs.Next() {
		j, err := v.scan(rs)
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
