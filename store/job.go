package store

import (
	"encoding/json"
	"strings"
	"time"
)

// State is where a job is in its life.
//
//	pending ──(dependencies done)──┐
//	scheduled ──(RunAt comes)──▶ available ──(claim)──▶ running ──▶ completed
//	                                 ▲                     │
//	                                 └──── retryable ◀─────┤ (error, attempts left)
//	                                                       ├──▶ discarded (attempts used up)
//	                                                       └──▶ cancelled
//
// Any job not yet running can be cancelled; a job not started by its ExpiresAt ends expired. A
// pending job waits for the jobs it depends on (see InsertParams.DependsOn).
type State string

const (
	StateScheduled State = "scheduled"
	// StatePending is a job waiting for its dependencies to end.
	StatePending   State = "pending"
	StateAvailable State = "available"
	StateRunning   State = "running"
	StateRetryable State = "retryable"
	StateCompleted State = "completed"
	StateCancelled State = "cancelled"
	StateDiscarded State = "discarded"
	StateExpired   State = "expired"
)

// States lists every state, in the order a dashboard shows them.
var States = []State{
	StateAvailable, StateScheduled, StatePending, StateRunning, StateRetryable,
	StateCompleted, StateCancelled, StateDiscarded, StateExpired,
}

// Final reports whether a job in state s will never run again unless a user retries it.
func (s State) Final() bool {
	switch s {
	case StateCompleted, StateCancelled, StateDiscarded, StateExpired:
		return true
	}
	return false
}

// Valid reports whether s is one of the known states.
func (s State) Valid() bool {
	for _, v := range States {
		if s == v {
			return true
		}
	}
	return false
}

// JobRow is a job as the store holds it.
type JobRow struct {
	ID          int64           `json:"id"`
	Kind        string          `json:"kind"`
	Queue       string          `json:"queue"`
	Args        json.RawMessage `json:"args"`
	Priority    int             `json:"priority"`
	State       State           `json:"state"`
	Attempt     int             `json:"attempt"`
	MaxAttempts int             `json:"max_attempts"`
	// RunAt is when the job may run from: the insert time for jobs to run now, the delayed time for
	// scheduled jobs, the retry time for retryable ones.
	RunAt     time.Time `json:"run_at"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	UniqueKey string    `json:"unique_key,omitempty"`
	// Schedule names the cron schedule that planned the job, if one did.
	Schedule string          `json:"schedule,omitempty"`
	Tags     []string        `json:"tags,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Workflow is the id of the workflow or batch the job is a step of, Step its name there.
	Workflow string `json:"workflow,omitempty"`
	Step     string `json:"step,omitempty"`
	// DependsOn lists the jobs this one waited or waits for, in the order they were given
	// (InsertParams.DependsOn, then DependsOnIndex, then jobs added by DependencyOf), each once
	// however often it was named.
	DependsOn        []int64 `json:"depends_on,omitempty"`
	IgnoreFailedDeps bool    `json:"ignore_failed_deps,omitempty"`
	// Errors holds the error of every failed attempt, oldest first.
	Errors []AttemptError  `json:"errors,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`

	CreatedAt   time.Time `json:"created_at"`
	AttemptedAt time.Time `json:"attempted_at,omitzero"`
	// AttemptedBy is the owner (node) of the latest claim. Claim sets it with Owner, but unlike
	// Owner it outlives the attempt, until the next claim: it says who ran the job last, with
	// AttemptedAt when that began and FinalizedAt when it ended.
	AttemptedBy string    `json:"attempted_by,omitempty"`
	FinalizedAt time.Time `json:"finalized_at,omitzero"`

	// Owner, LeaseUntil and Fence describe the current claim. Owner and LeaseUntil are set only
	// while the job runs: whatever ends the attempt (an outcome, the rescuer) clears them. Fence
	// grows on every claim and stays; outcomes carrying an older fence are ignored.
	Owner           string    `json:"owner,omitempty"`
	LeaseUntil      time.Time `json:"lease_until,omitzero"`
	Fence           int64     `json:"fence"`
	CancelRequested bool      `json:"cancel_requested,omitempty"`
}

// AttemptError is the record of one failed attempt.
type AttemptError struct {
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	Error   string    `json:"error"`
	// Trace is the stack of a panic, when the attempt panicked.
	Trace string `json:"trace,omitempty"`
	// Node is the owner of the claim the error ended and Duration how long that attempt ran, by
	// the store's clock (from the claim to the outcome or rescue). The store fills both from the
	// claim, whatever the caller said, as it does Attempt. Errors that end no attempt (a schedule
	// change, a failed dependency) have neither. Duration is in nanoseconds in JSON.
	Node     string        `json:"node,omitempty"`
	Duration time.Duration `json:"duration_ns,omitempty"`
}

// PortableError is e as every store can keep it: without NUL characters, which some databases
// refuse in text. An attempt's error is whatever a handler or a program's stderr said; one NUL in
// it must not make its outcome, and the outcomes written with it, unrecordable.
func PortableError(e AttemptError) AttemptError {
	e.Error = strings.ReplaceAll(e.Error, "\x00", "")
	e.Trace = strings.ReplaceAll(e.Trace, "\x00", "")
	return e
}

// InsertParams describes one job to insert. The runtime validates and fills defaults before a
// store sees it; a store trusts these values.
type InsertParams struct {
	Kind        string
	Queue       string
	Args        json.RawMessage
	Priority    int
	MaxAttempts int
	// RunAt zero means now: the job is available at once. A RunAt in the future makes it scheduled.
	RunAt     time.Time
	ExpiresAt time.Time
	// UniqueKey, when set, makes the insert a no-op returning the existing job if a job with the same
	// key is in one of UniqueStates (default: UniqueStatesDefault).
	UniqueKey    string
	UniqueStates []State
	// Supersede replaces an existing job with the same UniqueKey that is not running yet: the old
	// one ends cancelled.
	Supersede bool
	// Schedule names the cron schedule planning the job; only PlanSchedule sets it.
	Schedule string
	Tags     []string
	Metadata json.RawMessage

	// Workflow and Step place the job in a workflow or batch (ListParams.Workflow finds them).
	Workflow string
	Step     string
	// DependsOn names existing jobs, and DependsOnIndex earlier params of the same Insert call,
	// that this job waits for: it is inserted pending and becomes available (or scheduled, when
	// its RunAt is still ahead) once each of them has completed. When one ends discarded,
	// cancelled or expired, or is deleted before it ends, the job ends cancelled with
	// DependencyError naming it, and so in turn do the jobs waiting for it — unless
	// IgnoreFailedDeps, which makes it wait only for each to end, however. A dependency already
	// ended when the job is inserted counts as it ended. An id the store does not hold fails the
	// insert with ErrNotFound.
	DependsOn        []int64
	DependsOnIndex   []int
	IgnoreFailedDeps bool
	// DependencyOf adds the new job to the dependencies of a pending job (a batch's callback):
	// that job waits for this one too. A job that is not pending when the call begins fails
	// the insert with ErrNotPending, and nothing of the call is inserted; one that a job of the
	// call ends (joining it cancelled) takes the call's later jobs into its list all the same,
	// and they change nothing else of it. A duplicate (its unique key held) adds nothing: the
	// job holding the key is not the call's.
	DependencyOf int64
	// NumberStep, with DependencyOf, names the step Step followed by the job's place (from 1)
	// among the jobs DependencyOf waits for, decided where the store adds it there: jobs that
	// concurrent calls add to one job are named apart. Without DependencyOf it does nothing.
	NumberStep bool
}

// ZeroCounts returns a count of every state, each zero: stats list every state, counted or not.
func ZeroCounts() map[State]int64 {
	counts := make(map[State]int64, len(States))
	for _, st := range States {
		counts[st] = 0
	}
	return counts
}

// UniqueStatesDefault returns the states in which a job holds its unique key when its
// InsertParams name none: every state that is not final, so that a key is free again once its
// job has ended.
func UniqueStatesDefault() []State {
	var out []State
	for _, s := range States {
		if !s.Final() {
			out = append(out, s)
		}
	}
	return out
}

// InsertResult is the job an insert produced, or the existing one a unique key pointed to.
type InsertResult struct {
	Job       *JobRow
	Duplicate bool
}

// ClaimParams asks for jobs to run.
type ClaimParams struct {
	Queue    string
	Kinds    []string
	Max      int
	Owner    string
	LeaseFor time.Duration
}

// Outcome is the end of one attempt, fenced by the claim it belongs to.
type Outcome struct {
	ID    int64
	Fence int64
	// State is one of completed, retryable, scheduled (snoozed), available (handed back on
	// shutdown), cancelled or discarded.
	State State
	// RunAt is when a retryable or scheduled job may run again; zero means now, the store's. For
	// an available job zero keeps the job's old RunAt, which puts it first in line. A final
	// outcome keeps the job's RunAt whatever this says.
	RunAt time.Time
	// RefundAttempt gives the attempt back: a snoozed job or one interrupted by shutdown has not
	// used a try.
	RefundAttempt bool
	Error         *AttemptError
	Result        []byte
}

// ListParams filters List. Zero fields do not filter.
type ListParams struct {
	States []State
	Queue  string
	Kind   string
	// Workflow lists the steps of one workflow or batch.
	Workflow string
	// Tag lists jobs carrying that tag; Schedule those a cron schedule of that name planned.
	Tag      string
	Schedule string
	// Owner lists the jobs a node holds: those running under its claim, by the node's id.
	Owner string
	// ArgsContains lists jobs whose args, as JSON text, contain it (case-sensitive).
	ArgsContains string
	// ArgsPath and ArgsValue list jobs whose args hold, at the dot-separated object keys of
	// ArgsPath ("account.id"), the JSON string, number or boolean ArgsValue (`42`, `"acme"`,
	// `true`). They go together; Check says what is malformed.
	ArgsPath  string
	ArgsValue string
	// CreatedAfter and CreatedBefore list jobs created in [CreatedAfter, CreatedBefore).
	CreatedAfter  time.Time
	CreatedBefore time.Time
	AfterID       int64
	Desc          bool
	// Limit defaults to ListLimitDefault when zero.
	Limit int
}

// ListLimitDefault is List's page size when ListParams.Limit is zero (or less): a page a person
// reads, not the table.
const ListLimitDefault = 100

// PruneParams says which finished jobs to delete.
type PruneParams struct {
	States []State
	Before time.Time
	Limit  int
}

// QueueStats counts a queue's jobs by state.
type QueueStats struct {
	Queue  string          `json:"queue"`
	Paused bool            `json:"paused"`
	Counts map[State]int64 `json:"counts"`
	// OldestAvailable is the RunAt of the longest-waiting available job, zero when none waits.
	OldestAvailable time.Time `json:"oldest_available,omitzero"`
}
