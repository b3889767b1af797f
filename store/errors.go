package store

import "errors"

var (
	// ErrNotFound is returned for a job id, schedule or lease name the store does not hold.
	ErrNotFound = errors.New("not found")
	// ErrJobRunning is returned for an operation that needs the job to be stopped first.
	ErrJobRunning = errors.New("job is running")
	// ErrSchemaTooNew is returned when the store was migrated by a newer build of rota.
	ErrSchemaTooNew = errors.New("store schema is newer than this build understands")
	// ErrInvalidLimit is returned by SetLimit for a limit that fails Limit.Validate.
	ErrInvalidLimit = errors.New("invalid limit")
)
