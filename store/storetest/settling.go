package storetest

import (
	"strconv"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

// Parking is what Settling needs of a store beyond the contract. Every store resolves at most a
// bounded number of dependency edges per transaction (or script) and parks the ends whose edges
// are left, to settle them in further ones before its call returns; how it parks is its own.
type Parking struct {
	// Open returns a fresh store that settles two edges per transaction.
	Open Opener
	// CompleteLeavingParked records o as a Store whose process died right after the write
	// committed would have: what it parked stays parked.
	CompleteLeavingParked func(t *testing.T, s store.Store, o store.Outcome)
	// Left counts the parked ends and the dependency edges s holds.
	Left func(t *testing.T, s store.Store) (parked, edges int)
}

// Settling runs, against stores that settle two edges at a time, what splitting a resolution
// must keep: a dependent counted off once per dependency, released or cancelled as by one
// transaction, whatever ends, retries or deletes its dependencies meanwhile, and nothing left
// behind. A store's own tests call it beside Run.
func Settling(t *testing.T, p Parking) {
	tests := map[string]func(*testing.T, *parking){
		"CompleteSettlesWhatItParked":      testCompleteSettlesWhatItParked,
		"FailureCancelsThroughCascades":    testParkedFailureCancelsThroughCascades,
		"RescueSettlesWhatADeadStoreLeft":  testRescueSettlesWhatADeadStoreLeft,
		"DeleteOfParkedDependencyReleases": testDeleteOfParkedDependencyReleases,
		"RetriedJobForgetsItsParkedEnd":    testRetriedJobForgetsItsParkedEnd,
		"RetryWorkflowKeepsParkedEdges":    testRetryWorkflowKeepsParkedEdges,
	}
	for _, name := range sortedKeys(tests) {
		t.Run(name, func(t *testing.T) {
			tests[name](t, &parking{env: newEnv(t, p.Open), p: p})
		})
	}
}

// parking is one Settling test's store and what it knows of its parking.
type parking struct {
	*env
	p Parking
}

func (e *parking) leaveParked(o store.Outcome) {
	e.t.Helper()
	e.p.CompleteLeavingParked(e.t, e.s, o)
}

// claimKind claims the one available job of kind k.
func (e *parking) claimKind(k string) *store.JobRow {
	e.t.Helper()
	rows := e.claimParams(store.ClaimParams{Queue: "default", Kinds: []string{k}, Max: 1, Owner: "node-1", LeaseFor: time.Minute})
	if len(rows) != 1 {
		e.t.Fatalf("claim of kind %s: got %d jobs, want 1", k, len(rows))
	}
	return rows[0]
}

// claimedRoot inserts a root job with n dependents and claims the root.
func (e *parking) claimedRoot(n int) (*store.JobRow, []int64) {
	e.t.Helper()
	root := e.insertOne(job("root"))
	deps := make([]store.InsertParams, n)
	for i := range deps {
		deps[i] = job("dep")
		deps[i].DependsOn = []int64{root.ID}
	}
	var ids []int64
	for _, j := range e.insert(deps...) {
		ids = append(ids, j.ID)
	}
	return e.claimKind("root"), ids
}

func (e *parking) states(ids []int64) map[store.State]int {
	e.t.Helper()
	n := make(map[store.State]int)
	for _, id := range ids {
		n[e.get(id).State]++
	}
	return n
}

// allReleased checks that every dependent is available and that nothing is left parked or
// waiting: no parked end, no edge.
func (e *parking) allReleased(dependents []int64, when string) {
	e.t.Helper()
	if n := e.states(dependents); n[store.StateAvailable] != len(dependents) {
		e.t.Fatalf("%s: %v, want all %d available", when, n, len(dependents))
	}
	e.nothingLeft(when)
}

func (e *parking) nothingLeft(when string) {
	e.t.Helper()
	if parked, edges := e.p.Left(e.t, e.s); parked != 0 || edges != 0 {
		e.t.Fatalf("%s: %d parked ends and %d edges left, want none", when, parked, edges)
	}
}

// parkedRelease completes a root with five dependents as a Store that died right after:
// two dependents released, three parked.
func (e *parking) parkedRelease() (*store.JobRow, []int64) {
	e.t.Helper()
	root, dependents := e.claimedRoot(5)
	e.leaveParked(Completed(root))
	if got := e.states(dependents)[store.StateAvailable]; got != 2 {
		e.t.Fatalf("%d dependents released by the completing transaction, want the batch of 2", got)
	}
	if parked, _ := e.p.Left(e.t, e.s); parked != 1 {
		e.t.Fatalf("%d ends parked, want the root's", parked)
	}
	return root, dependents
}

// Completed is the outcome that completes claimed job j.
func Completed(j *store.JobRow) store.Outcome {
	return store.Outcome{ID: j.ID, Fence: j.Fence, State: store.StateCompleted}
}

// Discarded is the outcome that discards claimed job j after a failed attempt.
func Discarded(j *store.JobRow) store.Outcome {
	return store.Outcome{ID: j.ID, Fence: j.Fence, State: store.StateDiscarded, Error: &store.AttemptError{Error: "boom"}}
}

// A completion that parks settles the rest before Complete returns: its caller sees every
// dependent released, and nothing is left behind.
func testCompleteSettlesWhatItParked(t *testing.T, e *parking) {
	root, dependents := e.claimedRoot(7)
	e.completeOK(Completed(root))
	e.allReleased(dependents, "after Complete")
}

// A failure that parks cancels the rest as one transaction would have, cascades included: each
// cancelled dependent's own dependents are cancelled in turn, however the settling is split.
func testParkedFailureCancelsThroughCascades(t *testing.T, e *parking) {
	root, dependents := e.claimedRoot(3)
	var all []int64
	for _, d := range dependents {
		p := job("grand")
		p.DependsOn = []int64{d}
		all = append(all, d, e.insertOne(p).ID)
	}
	e.completeOK(Discarded(root))
	if n := e.states(all); n[store.StateCancelled] != 6 {
		t.Fatalf("after the discard: %v, want all 6 cancelled", n)
	}
	e.nothingLeft("after the discard")
}

// What a Store left parked when it died is settled by the next rescue pass, on any node.
func testRescueSettlesWhatADeadStoreLeft(t *testing.T, e *parking) {
	_, dependents := e.parkedRelease()
	if _, err := e.s.Rescue(e.ctx, 10); err != nil {
		t.Fatal(err)
	}
	e.allReleased(dependents, "after the rescuer")
}

// A completed job deleted while its dependents are parked releases them as its completion
// would have: the delete is not taken for a failed dependency.
func testDeleteOfParkedDependencyReleases(t *testing.T, e *parking) {
	root, dependents := e.parkedRelease()
	if err := e.s.Delete(e.ctx, root.ID); err != nil {
		t.Fatal(err)
	}
	e.allReleased(dependents, "after the delete")
}

// A parked end whose job is made to run again is forgotten: the dependents left wait for the
// job's next end instead of being settled by the one it had.
func testRetriedJobForgetsItsParkedEnd(t *testing.T, e *parking) {
	root, dependents := e.claimedRoot(5)
	e.leaveParked(Discarded(root))
	if n := e.states(dependents); n[store.StateCancelled] != 2 || n[store.StatePending] != 3 {
		t.Fatalf("after the discard: %v, want 2 cancelled and 3 parked pending", n)
	}
	if _, err := e.s.Retry(e.ctx, root.ID); err != nil {
		t.Fatal(err)
	}
	if parked, _ := e.p.Left(t, e.s); parked != 0 {
		t.Fatalf("%d ends parked after the retry, want none", parked)
	}
	if _, err := e.s.Rescue(e.ctx, 10); err != nil {
		t.Fatal(err)
	}
	if n := e.states(dependents); n[store.StatePending] != 3 {
		t.Fatalf("after the retry: %v, want the 3 still waiting", n)
	}
	e.completeOK(Completed(e.claimKind("root")))
	if n := e.states(dependents); n[store.StateCancelled] != 2 || n[store.StateAvailable] != 3 {
		t.Fatalf("after the second end: %v, want 2 cancelled and 3 released", n)
	}
}

// A workflow retried while its failed step's end is still parked keeps that step's edges,
// though no retried step waits for it (its dependents run anyway, and none failed): the
// dependents they lead to are released by its next end instead of waiting for ever.
func testRetryWorkflowKeepsParkedEdges(t *testing.T, e *parking) {
	ps := make([]store.InsertParams, 6)
	for i := range ps {
		ps[i] = job("dep")
		ps[i].Workflow, ps[i].Step = "wf", "s"+strconv.Itoa(i)
		if i > 0 {
			ps[i].DependsOnIndex = []int{0}
			ps[i].IgnoreFailedDeps = true
		}
	}
	ps[0].Kind = "root"
	var dependents []int64
	for _, j := range e.insert(ps...)[1:] {
		dependents = append(dependents, j.ID)
	}
	e.leaveParked(Discarded(e.claimKind("root")))
	if n := e.states(dependents); n[store.StateAvailable] != 2 || n[store.StatePending] != 3 {
		t.Fatalf("after the discard: %v, want 2 released and 3 parked pending", n)
	}
	if _, err := e.s.RetryWorkflow(e.ctx, "wf"); err != nil {
		t.Fatal(err)
	}
	e.completeOK(Completed(e.claimKind("root")))
	if n := e.states(dependents); n[store.StateAvailable] != len(dependents) {
		t.Fatalf("after the retried step completed: %v, want all %d available", n, len(dependents))
	}
}
