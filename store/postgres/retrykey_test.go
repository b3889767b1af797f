package postgres

import (
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

// RetryWorkflow gives a key to the first of its steps by id that will hold it in the state it
// goes to: a step that goes back to waiting (pending), whose UniqueStates name available only,
// takes none, and the step that runs now keeps its key. (SQLite keeps no UniqueStates per job
// and judges holders by the default states, in which pending holds a key.)
func TestRetryWorkflowKeepsTheKeyForTheStepThatHoldsIt(t *testing.T) {
	ctx := t.Context()
	s := open(t)
	step := func(name string, deps ...int) store.InsertParams {
		p := job("k")
		p.Workflow, p.Step, p.DependsOnIndex, p.MaxAttempts = "wf", name, deps, 1
		return p
	}
	states := []store.State{store.StateAvailable}
	a, b := step("a", 0), step("b")
	a.UniqueKey, a.UniqueStates = "u", states
	b.UniqueKey, b.UniqueStates = "u", states
	res, err := s.Insert(ctx, []store.InsertParams{step("r"), a, b})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Duplicate {
			t.Fatalf("job %d of the call is a duplicate of %d", i, r.Job.ID)
		}
	}
	// r and b fail; a is cancelled with r.
	claimed, err := s.Claim(ctx, store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 10, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(claimed) != 2 {
		t.Fatalf("Claim = %v, %v; want r and b", claimed, err)
	}
	var outcomes []store.Outcome
	for _, j := range claimed {
		outcomes = append(outcomes, store.Outcome{ID: j.ID, Fence: j.Fence, State: store.StateDiscarded,
			Error: &store.AttemptError{Attempt: 1, Error: "failed"}})
	}
	if _, err := s.Complete(ctx, outcomes); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RetryWorkflow(ctx, "wf"); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int64]store.State{res[1].Job.ID: store.StatePending, res[2].Job.ID: store.StateAvailable} {
		if j, err := s.Get(ctx, id); err != nil || j.State != want {
			t.Fatalf("job %d: %v, %v; want %s", id, j, err, want)
		}
	}
	p := job("k")
	p.UniqueKey, p.UniqueStates = "u", states
	got, err := s.Insert(ctx, []store.InsertParams{p})
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].Duplicate || got[0].Job.ID != res[2].Job.ID {
		t.Errorf("insert of the key: duplicate %v of %d (%s), want a duplicate of b %d",
			got[0].Duplicate, got[0].Job.ID, got[0].Job.State, res[2].Job.ID)
	}
}
