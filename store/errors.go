package store

import "errors"

var (
	// ErrNotFound is returned for a job id, schedule or lease name the store does not hold.
	ErrNotFound = errors.New("not found")
	// ErrJobRunning is returned for an operation that needs the job to be stopped first.
	ErrJobRunning = errors.New("job is running")
	// ErrNotPending is returned for an insert that adds a dependency to a job that no longer
	// waits (InsertParams.DependencyOf): a batch whose callback has been released is closed.
	ErrNotPending = errors.New("job is not pending")
	// ErrSchemaTooNew is returned when the store was migrated by a newer build of rota.
	ErrSchemaTooNew = errors.New("store schema is newer than this build understands")
	// ErrInvalidLimit is returned by SetLimit for a limit that fails Limit.Validate.
	ErrInvalidLimit = errors.New("invalid limit")
	// ErrUnavailable is wrapped by errors of a store that cannot take writes for a reason of its
	// own, not the caller's: a full disk, a read-only file or database, a lost connection. The
	// call may succeed later; callers such as the HTTP API answer 503, not 500.
	ErrUnavailable = errors.New("store unavailable")
)
