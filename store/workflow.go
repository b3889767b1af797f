package store

import (
	"strconv"
	"time"
)

// Workflows: jobs that wait for other jobs. A store keeps, for every job inserted with
// dependencies, the edges to them and how many it still waits for, and resolves a job's
// dependents in the same transaction as whatever ends it — a completion, a cancel, a rescue, an
// expiry, a delete — so that a completion costs work in proportion to its dependents and a
// waiting job costs nothing. A workflow is the set of jobs that carry its id.

// WorkflowStats counts one workflow's steps by state.
type WorkflowStats struct {
	ID     string          `json:"id"`
	Counts map[State]int64 `json:"counts"`
	// CreatedAt is when its first step was inserted.
	CreatedAt time.Time `json:"created_at"`
}

// WorkflowListParams pages through workflows, newest (greatest id) first.
type WorkflowListParams struct {
	// ID, when set, asks for that one workflow.
	ID string
	// Before starts the page after the workflow with this id (keyset pagination).
	Before string
	// Limit defaults to ListLimitDefault when zero.
	Limit int
}

// DependencyError is the error recorded on a pending job that ended cancelled because job dep,
// one it waited for, ended in state without completing.
func DependencyError(dep int64, state State) string {
	return "dependency job " + strconv.FormatInt(dep, 10) + " ended " + string(state)
}

// DependencyDeletedError is the error recorded on a pending job that ended cancelled because job
// dep, one it waited for, was deleted before it ended.
func DependencyDeletedError(dep int64) string {
	return "dependency job " + strconv.FormatInt(dep, 10) + " was deleted"
}

// WaitsFor reports whether a dependent that ignores failed dependencies or not still waits for a
// dependency in state s: every dependent waits for one that has not ended, and one that does
// not ignore failures waits only for a completion (the others end it).
func WaitsFor(s State, ignoreFailed bool) bool {
	if ignoreFailed {
		return !s.Final()
	}
	return s != StateCompleted
}
