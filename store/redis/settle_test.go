package redis

import (
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

// parkedRelease inserts a root with five dependents on a store settling two per call, claims
// the root and completes it with one script call, as a Store whose process died right after
// would have: two dependents released, three parked.
func parkedRelease(t *testing.T) (*Store, *store.JobRow, []*store.JobRow) {
	t.Helper()
	s := open(t, WithSettleBatch(2))
	root, dependents := claimedRoot(t, s, 5)
	out := []store.Outcome{{ID: root.ID, Fence: root.Fence, State: store.StateCompleted}}
	v, err := s.write(t.Context(), scriptComplete, s.argv(scriptComplete, s.completeArgs(out)))
	if err != nil {
		t.Fatal(err)
	}
	if _, parked := unwrapParked(v); !parked {
		t.Fatal("a release of five dependents two at a time parked nothing")
	}
	if got := countStates(t, s, dependents)[store.StateAvailable]; got != 2 {
		t.Fatalf("%d dependents released by the completing call, want the batch of 2", got)
	}
	return s, root, dependents
}

// claimedRoot inserts a root job with n dependents and claims the root.
func claimedRoot(t *testing.T, s *Store, n int) (*store.JobRow, []*store.JobRow) {
	t.Helper()
	root := insertAll(t, s, job("root"))[0]
	deps := make([]store.InsertParams, n)
	for i := range deps {
		deps[i] = job("dep")
		deps[i].DependsOn = []int64{root.ID}
	}
	dependents := insertAll(t, s, deps...)
	claimed, err := s.Claim(t.Context(), store.ClaimParams{Queue: "default", Kinds: []string{"root"}, Max: 1, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	return claimed[0], dependents
}

func countStates(t *testing.T, s *Store, rows []*store.JobRow) map[store.State]int {
	t.Helper()
	n := make(map[store.State]int)
	for _, r := range rows {
		n[get(t, s, r.ID).State]++
	}
	return n
}

// What a Store left parked when it died is settled by the leader's rescuer, and leaves nothing
// behind: no parked end, no edge.
func TestParkedDependentsSettledByRescue(t *testing.T) {
	s, _, dependents := parkedRelease(t)
	if _, err := s.Rescue(t.Context(), 10); err != nil {
		t.Fatal(err)
	}
	if n := countStates(t, s, dependents); n[store.StateAvailable] != len(dependents) {
		t.Fatalf("after the rescuer: %v, want all %d available", n, len(dependents))
	}
	if n, err := s.rdb.HLen(t.Context(), s.prefix+"settling").Result(); err != nil || n != 0 {
		t.Fatalf("settling holds %d ends (%v), want none", n, err)
	}
	if keys := depKeys(t, s); len(keys) != 0 {
		t.Fatalf("edges left: %v", keys)
	}
}

// A completed job deleted while its dependents are parked releases them as its completion
// would have: the delete is not taken for a failed dependency.
func TestDeleteOfParkedDependencyReleases(t *testing.T) {
	s, root, dependents := parkedRelease(t)
	if err := s.Delete(t.Context(), root.ID); err != nil {
		t.Fatal(err)
	}
	if n := countStates(t, s, dependents); n[store.StateAvailable] != len(dependents) {
		t.Fatalf("after the delete: %v, want all %d available", n, len(dependents))
	}
}

// A call that parks settles the rest before it returns: its caller sees every dependent
// released, over several calls of the settle script.
func TestCompleteSettlesWhatItParked(t *testing.T) {
	s := open(t, WithSettleBatch(2))
	root, dependents := claimedRoot(t, s, 7)
	if _, err := s.Complete(t.Context(), []store.Outcome{{ID: root.ID, Fence: root.Fence, State: store.StateCompleted}}); err != nil {
		t.Fatal(err)
	}
	if n := countStates(t, s, dependents); n[store.StateAvailable] != len(dependents) {
		t.Fatalf("after Complete: %v, want all %d available", n, len(dependents))
	}
}
