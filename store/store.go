// Package store defines the contract between rota's runtime and the databases that hold its state.
//
// Every piece of job state lives behind the Store interface. The runtime never speaks a database's
// language, and a store never decides policy: it does not pick backoff delays, which queue to serve
// or how many jobs a node may run. It applies the transitions it is asked for, atomically, judged by
// its own clock, and refuses writes that carry a stale fence. The few transitions a store makes
// without being told the end state or the words (a rescue, a cancel request overriding an outcome,
// the cancellation of a schedule's planned jobs) are decided by the functions of this package
// (RescueState, CancelRequestedState, RescueError, ScheduleChangedError, ScheduleRemovedError),
// which every store applies alike.
//
// Powers only some stores have (joining a caller's transaction, pushing notifications) are small
// optional interfaces discovered by type assertion, in the manner of database/sql/driver.
//
// The conformance suite in store/storetest proves that a Store meets this contract.
package store

import (
	"context"
	"time"
)

// Store is the contract every backend implements. All methods are safe for concurrent use.
type Store interface {
	// Limiter stores the fleet-wide concurrency and rate limits that Claim enforces.
	Limiter
	// Scheduler stores cron schedules and plans their occurrences exactly once.
	Scheduler

	// Migrate brings the schema up to the version this build understands. It is idempotent and safe
	// to call from several processes at once. It fails with ErrSchemaTooNew when the store was
	// migrated by a newer build.
	Migrate(ctx context.Context) error

	// Identity returns a random id written when the store was first migrated. A changed identity
	// means the store was reset (recreated, restored, flushed), and leases taken before prove nothing.
	Identity(ctx context.Context) (string, error)

	// Close releases the store's connections. Jobs are not touched.
	Close() error

	// Insert adds jobs atomically: either all are durable when it returns or none is.
	// Results are in the order of params.
	Insert(ctx context.Context, params []InsertParams) ([]InsertResult, error)

	// Claim atomically takes up to p.Max claimable jobs of p.Queue whose kind is in p.Kinds: available
	// jobs and scheduled or retryable jobs whose RunAt has come, highest priority first, then oldest
	// RunAt, then lowest id. Claimed jobs become running with Attempt+1, a new Fence, Owner and
	// AttemptedBy = p.Owner, AttemptedAt = now and LeaseUntil = now + p.LeaseFor. Jobs of a
	// paused queue are not claimed. A job past its ExpiresAt is never returned: it ends expired
	// instead. Jobs are returned in claim order; empty p.Kinds claims nothing. A claim takes no job that a Limit holds back (see Limiter).
	Claim(ctx context.Context, p ClaimParams) ([]*JobRow, error)

	// Heartbeat extends the lease of every job running under owner to now + leaseFor, and returns the
	// ids among them that a user asked to cancel, so the node can cancel their contexts.
	Heartbeat(ctx context.Context, owner string, leaseFor time.Duration) (cancelRequested []int64, err error)

	// Complete records the outcomes of attempts. An outcome is applied only while the job is running
	// with the outcome's fence; applied[i] reports whether outcomes[i] was. Several outcomes of one
	// job are applied in their order, so once one is applied the later ones are not. A job a user
	// asked to cancel while it ran (CancelRequested) ends in CancelRequestedState(outcome's state):
	// an outcome that would run it again ends it cancelled. An outcome's error is recorded with
	// the attempt number, the owner (Node) and the running time (Duration: now - AttemptedAt) of
	// the claim it ends, whatever the caller said, and with the store's time when its At is zero;
	// its texts are kept without NUL characters (PortableError), which not every store can hold.
	// An outcome whose State is not one of Outcome's is refused with an error, and nothing of the
	// call is applied.
	Complete(ctx context.Context, outcomes []Outcome) (applied []bool, err error)

	// Rescue takes up to limit running jobs whose lease has expired (their node died, hung or lost
	// the store), oldest lease first, and ends each one's attempt with the error
	// RescueError(owner), with Node and Duration as Complete records them, in the state
	// RescueState gives: retryable and due at once when it has attempts left, discarded when not,
	// cancelled when a user asked to cancel it. A final job is finalized now. Two rescues at once
	// never rescue one job twice. It returns the rescued jobs as they now are.
	Rescue(ctx context.Context, limit int) ([]*JobRow, error)

	// Get returns one job, or ErrNotFound.
	Get(ctx context.Context, id int64) (*JobRow, error)

	// List returns jobs matching p, ordered by id (ascending, or descending with p.Desc), starting
	// after p.AfterID when it is set (keyset pagination). ListParams that fail p.Check are an
	// error wrapping ErrInvalidList.
	List(ctx context.Context, p ListParams) ([]*JobRow, error)

	// Cancel ends a job that is not running as cancelled. For a running job it records the request
	// (CancelRequested) and leaves the ending to the node running it, which learns of it at its next
	// heartbeat. A job already final is returned unchanged. Unknown ids give ErrNotFound.
	Cancel(ctx context.Context, id int64) (*JobRow, error)

	// Retry makes a job that is not running available now, a pending one too (it no longer waits
	// for its dependencies). A job whose attempts are used up gets one more (MaxAttempts =
	// Attempt + 1). A running job gives ErrJobRunning.
	Retry(ctx context.Context, id int64) (*JobRow, error)

	// Delete removes a job that is not running. A running job gives ErrJobRunning. The pending
	// jobs that waited for a deleted job that had not ended end cancelled
	// (DependencyDeletedError).
	Delete(ctx context.Context, id int64) error

	// Prune deletes up to p.Limit jobs in one of p.States that were finalized before p.Before, and
	// returns how many it deleted. A Limit of zero or less deletes every match.
	Prune(ctx context.Context, p PruneParams) (int, error)

	// Workflows counts the steps of workflows by state (see WorkflowListParams).
	Workflows(ctx context.Context, p WorkflowListParams) ([]WorkflowStats, error)

	// RetryWorkflow runs a workflow's ended-but-not-completed steps again, in the order their
	// dependencies give: each such step waits again (pending) for those of its dependencies that
	// have not completed, counting the steps retried with it, and is available now when it
	// waits for none; a step whose attempts are used up gets one more. Running, waiting and
	// completed steps are left as they are, and so is a step that would wait for a job that
	// ended without completing and does not run again (outside the workflow), with the steps
	// that wait for it. It returns the steps it changed, as they now are; an unknown workflow
	// gives ErrNotFound.
	RetryWorkflow(ctx context.Context, workflow string) ([]*JobRow, error)

	// QueueStats counts jobs per state for every queue that has jobs or is paused.
	QueueStats(ctx context.Context) ([]QueueStats, error)

	// PauseQueue stops claims from a queue, fleet-wide, until ResumeQueue. Pausing a queue that has
	// no jobs yet is allowed.
	PauseQueue(ctx context.Context, queue string) error
	ResumeQueue(ctx context.Context, queue string) error
}

// Tidier is implemented by stores that have housekeeping of their own to do, often and from one
// node of a fleet, such as vacuuming the jobs table as soon as claims would slow down stepping
// over the rows they left behind. The leader calls Tidy every few seconds; a call that
// finds nothing to do is one cheap read.
type Tidier interface {
	Tidy(ctx context.Context) error
}

// QueueLoader is implemented by stores whose QueueStats reads the whole table: it counts one
// queue's available and running jobs, and says whether it is paused, from what claims read
// anyway, so that a best-effort insert (DropIfBusy) can ask on every call. The result has the
// two counts only.
type QueueLoader interface {
	QueueLoad(ctx context.Context, queue string) (QueueStats, error)
}

// ConcurrentClaimer is implemented by stores that serve a node faster with several of its claims
// on one queue in flight at once: a store whose server runs every claim and completion one after
// another on one thread idles, with one claim in flight, while the node reads the claim's jobs
// and starts them; with two, the next claim is already waiting. A node runs ClaimsInFlight claim
// loops per queue, which never ask for more slots together than the queue has free; without
// this interface, one.
type ConcurrentClaimer interface {
	ClaimsInFlight() int
}

// Notifier is implemented by stores that can push events to subscribers, so idle nodes wake at
// once and Wait returns without polling. Stores without it are polled.
type Notifier interface {
	// Subscribe delivers notifications until ctx ends. A slow subscriber is not waited for: in
	// place of the notifications it had no room for it gets a TopicInsert with no queue and a
	// TopicChanged, so that it looks again rather than waiting for its next poll. The runtime
	// polls as well, for what a store cannot see at all (another process's commit that its
	// watcher has not noticed yet, a connection being re-established).
	Subscribe(ctx context.Context) (<-chan Notification, error)
}

// Topic names what a notification is about.
type Topic string

const (
	// TopicInsert says jobs became available in Queue; with no Queue, in any queue (a store that
	// learns that another process inserted jobs but not where).
	TopicInsert Topic = "insert"
	// TopicFinal says job JobID reached a final state.
	TopicFinal Topic = "final"
	// TopicChanged says another process changed the store, and no more: a store that cannot tell
	// what changed (one that sees only that another process wrote, or one that lost notifications
	// while it reconnected) sends it instead of TopicFinal. Any job may have ended; subscribers that
	// wait for one look again.
	TopicChanged Topic = "changed"
)

// Notification is one pushed event. Notifications may be coalesced: one TopicInsert stands for any
// number of jobs inserted into its queue.
type Notification struct {
	Topic Topic
	Queue string
	JobID int64
}

// TxInserter is implemented by SQL stores: the jobs are inserted in the caller's own transaction,
// so they exist if and only if that transaction commits. tx is the store's transaction type
// (*sql.Tx for SQLite, pgx.Tx for PostgreSQL); any other type is an error.
type TxInserter interface {
	InsertTx(ctx context.Context, tx any, params []InsertParams) ([]InsertResult, error)
}
