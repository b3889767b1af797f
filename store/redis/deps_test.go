package redis

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/redistest"
	"github.com/rotahq/rota/store"
)

// depKeys returns the namespace's edge keys, the dep:<id> sets and the rel:<id> hashes of their
// dependents' release entries: a settled dependency leaves none behind.
func depKeys(t *testing.T, s *Store) []string {
	t.Helper()
	var keys []string
	for _, pattern := range []string{"dep:*", "rel:*"} {
		k, err := s.rdb.Keys(t.Context(), s.prefix+pattern).Result()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k...)
	}
	return keys
}

func insertAll(t *testing.T, s *Store, ps ...store.InsertParams) []*store.JobRow {
	t.Helper()
	res, err := s.Insert(t.Context(), ps)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*store.JobRow, len(res))
	for i, r := range res {
		out[i] = r.Job
	}
	return out
}

func get(t *testing.T, s *Store, id int64) *store.JobRow {
	t.Helper()
	j, err := s.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// A failure at the head of a long chain cancels all of it in the script that ends the head,
// each link naming the one before, with no recursion and no edge left behind.
func TestDepChainCancelsInOneScript(t *testing.T) {
	s := open(t)
	const n = 1000
	ps := make([]store.InsertParams, n)
	for i := range ps {
		ps[i] = job("k")
		if i > 0 {
			ps[i].DependsOnIndex = []int{i - 1}
		}
	}
	rows := insertAll(t, s, ps...)
	if _, err := s.Cancel(t.Context(), rows[0].ID); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{1, n / 2, n - 1} {
		j := get(t, s, rows[i].ID)
		want := store.DependencyError(rows[i-1].ID, store.StateCancelled)
		if j.State != store.StateCancelled || len(j.Errors) != 1 || j.Errors[0].Error != want {
			t.Fatalf("link %d: %s, errors %+v; want cancelled with %q", i, j.State, j.Errors, want)
		}
	}
	if keys := depKeys(t, s); len(keys) != 0 {
		t.Errorf("%d dependency sets left after the chain settled", len(keys))
	}
	for i, r := range rows[:n-1] {
		if dp := dpField(t, s, r.ID); dp != "1" {
			t.Fatalf("link %d keeps dp %q after the chain settled, want its one edge taken", i, dp)
		}
	}
}

// A call with dependencies larger than one insert chunk is still one script: an unknown id in
// its last job inserts nothing, and its last job may depend on its first.
func TestLargeDepCallIsAtomic(t *testing.T) {
	s := open(t)
	ps := make([]store.InsertParams, insertChunk+10)
	for i := range ps {
		ps[i] = job("k")
	}
	ps[len(ps)-1].DependsOn = []int64{424242}
	_, err := s.Insert(t.Context(), ps)
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Insert after an unknown job: %v, want ErrNotFound", err)
	}
	if rows, err := s.List(t.Context(), store.ListParams{}); err != nil || len(rows) != 0 {
		t.Fatalf("%d jobs after the failed insert (%v), want none", len(rows), err)
	}
	ps[len(ps)-1].DependsOn, ps[len(ps)-1].DependsOnIndex = nil, []int{0}
	rows := insertAll(t, s, ps...)
	last := get(t, s, rows[len(rows)-1].ID)
	if last.State != store.StatePending || !slices.Equal(last.DependsOn, []int64{rows[0].ID}) {
		t.Fatalf("last job: %s after %v, want pending after %d", last.State, last.DependsOn, rows[0].ID)
	}
	if _, err := s.Insert(t.Context(), []store.InsertParams{job("k"), {Kind: "k", Queue: "default", DependsOnIndex: []int{1}}}); err == nil {
		t.Error("Insert with a forward DependsOnIndex succeeded")
	}
}

// A job that joins a pending job and is itself inserted cancelled (a dependency of its own had
// failed) cancels the job it joined, unless that one ignores failures.
func TestJoinCancelledAtInsert(t *testing.T) {
	s := open(t)
	rows := insertAll(t, s, job("k"), job("k"))
	failed, other := rows[0].ID, rows[1].ID
	if _, err := s.Cancel(t.Context(), failed); err != nil {
		t.Fatal(err)
	}
	cb := job("k")
	cb.DependsOn = []int64{other}
	callback := insertAll(t, s, cb)[0]
	add := job("k")
	add.DependsOn, add.DependencyOf = []int64{failed}, callback.ID
	added := insertAll(t, s, add)[0]
	if added.State != store.StateCancelled {
		t.Fatalf("joining job is %s, want cancelled", added.State)
	}
	got := get(t, s, callback.ID)
	want := store.DependencyError(added.ID, store.StateCancelled)
	if got.State != store.StateCancelled || len(got.Errors) != 1 || got.Errors[0].Error != want {
		t.Fatalf("callback: %s, errors %+v; want cancelled with %q", got.State, got.Errors, want)
	}
	if !slices.Equal(got.DependsOn, []int64{other, added.ID}) {
		t.Errorf("callback DependsOn = %v, want %v", got.DependsOn, []int64{other, added.ID})
	}
}

// A workflow's counts follow its steps through claims, outcomes and prunes, List filters its
// steps by state, and the workflow goes when its last step does.
func TestWorkflowFollowsSteps(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	a, b := job("k"), job("k")
	a.Workflow, b.Workflow, b.DependsOnIndex = "wf", "wf", []int{0}
	rows := insertAll(t, s, a, b)
	counts := func() map[store.State]int64 {
		t.Helper()
		w, err := s.Workflows(ctx, store.WorkflowListParams{ID: "wf"})
		if err != nil || len(w) != 1 {
			t.Fatalf("Workflows(wf) = %+v, %v", w, err)
		}
		return w[0].Counts
	}
	claimed, err := s.Claim(ctx, store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 5, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("Claim = %d, %v", len(claimed), err)
	}
	if c := counts(); c[store.StateRunning] != 1 || c[store.StatePending] != 1 || c[store.StateAvailable] != 0 {
		t.Fatalf("after the claim: counts %v", c)
	}
	if _, err := s.Complete(ctx, []store.Outcome{{ID: claimed[0].ID, Fence: claimed[0].Fence, State: store.StateCompleted}}); err != nil {
		t.Fatal(err)
	}
	if c := counts(); c[store.StateCompleted] != 1 || c[store.StateAvailable] != 1 || c[store.StateRunning] != 0 {
		t.Fatalf("after the completion: counts %v", c)
	}
	done, err := s.List(ctx, store.ListParams{Workflow: "wf", States: []store.State{store.StateCompleted}})
	if err != nil || len(done) != 1 || done[0].ID != rows[0].ID {
		t.Fatalf("List(wf, completed) = %v, %v; want job %d", done, err, rows[0].ID)
	}
	if n, err := s.Prune(ctx, store.PruneParams{States: []store.State{store.StateCompleted}, Before: time.Now().Add(time.Hour)}); err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	if c := counts(); c[store.StateCompleted] != 0 || c[store.StateAvailable] != 1 {
		t.Fatalf("after the prune: counts %v", c)
	}
	if err := s.Delete(ctx, rows[1].ID); err != nil {
		t.Fatal(err)
	}
	if w, err := s.Workflows(ctx, store.WorkflowListParams{}); err != nil || len(w) != 0 {
		t.Fatalf("Workflows after every step went = %+v, %v; want none", w, err)
	}
}

// A dependent released by another process's completion is announced like an insert, so that
// idle nodes wake for it.
func TestReleaseAnnounced(t *testing.T) {
	url := redistest.URL(t)
	ns := redistest.Namespace(t, url)
	a, b := openURL(t, url, ns, WithAutoMigrate()), openURL(t, url, ns)
	ctx := t.Context()
	dep := job("k")
	dep.Queue = "other"
	after := job("k")
	after.Queue, after.DependsOnIndex = "released", []int{0}
	insertAll(t, a, dep, after)
	ch, err := b.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := a.Claim(ctx, store.ClaimParams{Queue: "other", Kinds: []string{"k"}, Max: 1, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("Claim = %d, %v", len(claimed), err)
	}
	if _, err := a.Complete(ctx, []store.Outcome{{ID: claimed[0].ID, Fence: claimed[0].Fence, State: store.StateCompleted}}); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(5 * time.Second)
	for {
		select {
		case n := <-ch:
			if n.Topic == store.TopicInsert && n.Queue == "released" {
				return
			}
		case <-timeout:
			t.Fatal("no insert notification for the released job's queue")
		}
	}
}
