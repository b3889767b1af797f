// Package retryplan decides which steps of a workflow RetryWorkflow runs again, the same way in
// every store. It never reads or writes a store; the statements are the store's.
package retryplan

import (
	"slices"

	"github.com/rotahq/rota/store"
)

// Step is a workflow step as RetryWorkflow reads it.
type Step struct {
	ID           int64
	State        store.State
	DependsOn    []int64
	IgnoreFailed bool
}

// Failed reports whether the step ended without completing: what RetryWorkflow may run again,
// and the only steps whose dependencies outside the workflow it needs to read.
func (s Step) Failed() bool { return s.State.Final() && s.State != store.StateCompleted }

// Again returns the steps that run again, given the states of the jobs they name (a job missing
// from states was deleted, and is not waited for). The steps that ended without completing run
// again, except one that would wait for a job that ended without completing and does not run
// again (a job outside the workflow, or a step left as it is): it would be cancelled again at
// once, or wait for an end that has come and gone, so it stays as it is, and so in turn do the
// steps that wait for it.
func Again(steps []Step, states map[int64]store.State) map[int64]bool {
	again := make(map[int64]bool)
	for _, st := range steps {
		if st.Failed() {
			again[st.ID] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for _, st := range steps {
			if !again[st.ID] {
				continue
			}
			for _, dep := range st.DependsOn {
				state, ok := states[dep]
				if ok && !again[dep] && state.Final() && store.WaitsFor(state, st.IgnoreFailed) {
					delete(again, st.ID)
					changed = true
					break
				}
			}
		}
	}
	return again
}

// Waits reports whether a step that runs again waits for dep: dep runs again too, or has not
// ended. A dependency that ended as the step needs is not waited for; one that ended otherwise
// left the step out of Again.
func Waits(dep int64, again map[int64]bool, states map[int64]store.State) bool {
	state, ok := states[dep]
	return ok && (again[dep] || !state.Final())
}

// Rewait returns, by step, the dependencies run again (in again) that a step left as it is
// must wait for anew: a pending step that ignores failed dependencies (a batch's callback) has
// counted each of them off when it failed, and would otherwise be released while they run
// again, and never count their new ends. A step that does not ignore them was cancelled by that
// failure, and runs again itself. A store adds the wait only where the step no longer counts
// the dependency: an end of it not settled yet (parked) still holds its edge.
func Rewait(steps []Step, again map[int64]bool) map[int64][]int64 {
	out := make(map[int64][]int64)
	for _, st := range steps {
		if st.State != store.StatePending || !st.IgnoreFailed || again[st.ID] {
			continue
		}
		for k, dep := range st.DependsOn {
			if again[dep] && !slices.Contains(st.DependsOn[:k], dep) {
				out[st.ID] = append(out[st.ID], dep)
			}
		}
	}
	return out
}
