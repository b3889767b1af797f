package redis

import (
	"errors"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rotahq/rota/store"
)

// dpField is a job's dp field: its one dependent after '=', "1" for a set, empty for none.
func dpField(t *testing.T, s *Store, id int64) string {
	t.Helper()
	v, err := s.rdb.HGet(t.Context(), s.prefix+"j:"+strconv.FormatInt(id, 10), "dp").Result()
	if err != nil && !errors.Is(err, goredis.Nil) {
		t.Fatal(err)
	}
	return v
}

// A job's one dependent is kept in its hash, not in a set; a second turns both into the set,
// and the completion releases both and leaves no edge.
func TestOneDependentIsInline(t *testing.T) {
	s := open(t)
	root, first := claimedRoot(t, s, 1)
	if got, want := dpField(t, s, root.ID), "="+strconv.FormatInt(first[0].ID, 10); got != want {
		t.Fatalf("dp = %q with one dependent, want %q", got, want)
	}
	if keys := depKeys(t, s); len(keys) != 0 {
		t.Fatalf("a set for one dependent: %v", keys)
	}
	second := job("dep")
	second.DependsOn = []int64{root.ID}
	dependents := append(first, insertAll(t, s, second)...)
	if got := dpField(t, s, root.ID); got != "1" {
		t.Fatalf("dp = %q with two dependents, want the set's flag", got)
	}
	if _, err := s.Complete(t.Context(), []store.Outcome{{ID: root.ID, Fence: root.Fence, State: store.StateCompleted}}); err != nil {
		t.Fatal(err)
	}
	if n := countStates(t, s, dependents); n[store.StateAvailable] != 2 {
		t.Fatalf("after the completion: %v, want both available", n)
	}
	if keys := depKeys(t, s); len(keys) != 0 {
		t.Fatalf("edges left: %v", keys)
	}
}

// completeAB claims the jobs of kinds a and b, a first, and completes both in one call of the
// complete script, as a Store whose process died right after would have: nothing settles what
// the call parked. It reports whether it parked any.
func completeAB(t *testing.T, s *Store) (parked bool) {
	t.Helper()
	claimed, err := s.Claim(t.Context(), store.ClaimParams{Queue: "default", Kinds: []string{"a", "b"}, Max: 2, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	out := []store.Outcome{
		{ID: claimed[0].ID, Fence: claimed[0].Fence, State: store.StateCompleted},
		{ID: claimed[1].ID, Fence: claimed[1].Fence, State: store.StateCompleted},
	}
	v, err := s.write(t.Context(), scriptComplete, s.argv(scriptComplete, s.completeArgs(out)))
	if err != nil {
		t.Fatal(err)
	}
	_, parked = unwrapParked(v)
	return parked
}

// twoParkedEnds completes, in one script call settling one dependent, job a (two dependents)
// then job b (one): a's first dependent is released, the rest parked, b's edge still in its hash.
func twoParkedEnds(t *testing.T) (s *Store, roots, dependents []*store.JobRow) {
	t.Helper()
	s = open(t, WithSettleBatch(1))
	a := job("a")
	b := job("b")
	b.UniqueKey = "b" // completed through move(), which leaves the edge to the settling
	roots = insertAll(t, s, a, b)
	deps := make([]store.InsertParams, 3)
	for i := range deps {
		deps[i] = job("dep")
		deps[i].DependsOn = []int64{roots[i/2].ID}
	}
	dependents = insertAll(t, s, deps...)
	if !completeAB(t, s) {
		t.Fatal("nothing parked with a budget of one")
	}
	if got, want := dpField(t, s, roots[1].ID), "="+strconv.FormatInt(dependents[2].ID, 10); got != want {
		t.Fatalf("b's dp = %q while parked, want %q", got, want)
	}
	if got := get(t, s, dependents[2].ID).State; got != store.StatePending {
		t.Fatalf("b's dependent is %s while parked, want pending", got)
	}
	return s, roots, dependents
}

// An end whose one dependent finds the call's settling budget spent parks it like a set's; the
// settling takes it out of the hash once.
func TestInlineDependentParked(t *testing.T) {
	s, roots, dependents := twoParkedEnds(t)
	if _, err := s.Rescue(t.Context(), 10); err != nil {
		t.Fatal(err)
	}
	if n := countStates(t, s, dependents); n[store.StateAvailable] != 3 {
		t.Fatalf("after the settling: %v, want all 3 available", n)
	}
	if got := dpField(t, s, roots[1].ID); got != "1" {
		t.Fatalf("b's dp = %q once settled, want the edge taken", got)
	}
	if n, err := s.rdb.HLen(t.Context(), s.prefix+"settling").Result(); err != nil || n != 0 {
		t.Fatalf("settling holds %d ends (%v), want none", n, err)
	}
}

// A parked end deleted after a call's budget is spent still settles its one dependent: the
// edge goes with its hash, so nothing could settle it later.
func TestInlineDependentOfDroppedEnd(t *testing.T) {
	s, _, dependents := twoParkedEnds(t)
	// Prune drops a, whose set takes the budget of one, then b.
	n, err := s.Prune(t.Context(), store.PruneParams{Before: time.Now().Add(time.Hour), States: []store.State{store.StateCompleted}, Limit: 10})
	if err != nil || n != 2 {
		t.Fatalf("prune: %d, %v; want both ends dropped", n, err)
	}
	if n := countStates(t, s, dependents); n[store.StateAvailable] != 3 {
		t.Fatalf("after the prune: %v, want all 3 available", n)
	}
}

// A step run again by RetryWorkflow without waiting for a dependency that completed is not
// counted off by that dependency's end still parked: it waits for what it runs again with.
func TestRetriedStepNotCountedByParkedEnd(t *testing.T) {
	s := open(t, WithSettleBatch(1))
	a := job("a") // two dependents: its completion spends the call's budget
	as := insertAll(t, s, a)
	deps := []store.InsertParams{job("dep"), job("dep")}
	for i := range deps {
		deps[i].DependsOn = []int64{as[0].ID}
	}
	insertAll(t, s, deps...)
	b, e, x := job("b"), job("e"), job("x")
	b.UniqueKey = "b" // completed through move(), which leaves its one edge to the settling
	b.Workflow, e.Workflow, x.Workflow = "w", "w", "w"
	b.Step, e.Step, x.Step = "b", "e", "x"
	x.DependsOnIndex = []int{0, 1}
	steps := insertAll(t, s, b, e, x)
	if !completeAB(t, s) {
		t.Fatal("nothing parked with a budget of one")
	}
	if got, want := dpField(t, s, steps[0].ID), "="+strconv.FormatInt(steps[2].ID, 10); got != want {
		t.Fatalf("b's dp = %q, want its edge to x parked (%q)", got, want)
	}
	// e fails, which cancels x; the workflow runs both again, x waiting for e only.
	if _, err := s.Cancel(t.Context(), steps[1].ID); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, steps[2].ID).State; got != store.StateCancelled {
		t.Fatalf("x is %s after e was cancelled, want cancelled", got)
	}
	if _, err := s.RetryWorkflow(t.Context(), "w"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rescue(t.Context(), 10); err != nil { // settles b's parked end
		t.Fatal(err)
	}
	if got := get(t, s, steps[2].ID).State; got != store.StatePending {
		t.Fatalf("x is %s once b's parked end settled, want pending: e has not run again", got)
	}
	ce, err := s.Claim(t.Context(), store.ClaimParams{Queue: "default", Kinds: []string{"e"}, Max: 1, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(ce) != 1 {
		t.Fatalf("claim e: %v, %v", ce, err)
	}
	if _, err := s.Complete(t.Context(), []store.Outcome{{ID: ce[0].ID, Fence: ce[0].Fence, State: store.StateCompleted}}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, steps[2].ID).State; got != store.StateAvailable {
		t.Fatalf("x is %s once e completed, want available", got)
	}
}

// A completion takes its one dependent's edge in the write that ends it, so it settles that
// dependent even when an earlier end of the same call spent the budget: nothing of it is parked.
func TestCompletionSettlesItsOneDependentPastTheBudget(t *testing.T) {
	s := open(t, WithSettleBatch(1))
	roots := insertAll(t, s, job("a"), job("b"))
	deps := make([]store.InsertParams, 3)
	for i := range deps {
		deps[i] = job("dep")
		deps[i].DependsOn = []int64{roots[i/2].ID}
	}
	dependents := insertAll(t, s, deps...)
	completeAB(t, s)
	if got := get(t, s, dependents[2].ID).State; got != store.StateAvailable {
		t.Fatalf("b's one dependent is %s after b's completion, want available", got)
	}
	parked, err := s.rdb.HKeys(t.Context(), s.prefix+"settling").Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{strconv.FormatInt(roots[0].ID, 10)}; len(parked) != 1 || parked[0] != want[0] {
		t.Fatalf("parked ends %v, want only a's %v", parked, want)
	}
}

// relEntries is job id's release entries, by dependent id.
func relEntries(t *testing.T, s *Store, id int64) map[string]string {
	t.Helper()
	m, err := s.rdb.HGetAll(t.Context(), s.prefix+"rel:"+strconv.FormatInt(id, 10)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A dependent kept in a set is released from its release entry and its own state: into its own
// queue, kind and priority; one with a unique key has no entry; one that a join gave a second
// wait is not released by the first; and no entry outlives its edge.
func TestReleaseEntries(t *testing.T) {
	s := open(t)
	root, first := claimedRoot(t, s, 1) // the first dependent is inline: no entry
	other := job("other")
	other.Queue, other.Priority, other.DependsOn = "q2", 3, []int64{root.ID}
	unique := job("dep")
	unique.UniqueKey, unique.DependsOn = "u1", []int64{root.ID}
	joined := job("dep")
	joined.DependsOn = []int64{root.ID}
	rows := insertAll(t, s, other, unique, joined)
	entries := relEntries(t, s, root.ID)
	if len(entries) != 2 || entries[strconv.FormatInt(rows[0].ID, 10)] == "" || entries[strconv.FormatInt(rows[2].ID, 10)] == "" {
		t.Fatalf("entries %q, want the plain set-kept dependents %d and %d", entries, rows[0].ID, rows[2].ID)
	}
	// joined now waits for a second job too.
	second := job("second")
	second.DependencyOf = rows[2].ID
	insertAll(t, s, second)
	if _, err := s.Complete(t.Context(), []store.Outcome{{ID: root.ID, Fence: root.Fence, State: store.StateCompleted}}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, rows[2].ID).State; got != store.StatePending {
		t.Fatalf("the joined dependent is %s after one of its two dependencies, want pending", got)
	}
	if n := countStates(t, s, append(first, rows[:2]...)); n[store.StateAvailable] != 3 {
		t.Fatalf("after the root's completion: %v, want three available", n)
	}
	claimed, err := s.Claim(t.Context(), store.ClaimParams{Queue: "q2", Kinds: []string{"other"}, Max: 10, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(claimed) != 1 || claimed[0].ID != rows[0].ID || claimed[0].Priority != 3 {
		t.Fatalf("claim of q2/other: %v, %v; want job %d at priority 3", claimed, err, rows[0].ID)
	}
	if keys := depKeys(t, s); len(keys) != 0 {
		t.Fatalf("edges left: %v", keys)
	}
}

// A dependent that waits for one job and is due has a direct entry, which its dependency's
// completion releases it from without reading its hash; so every way a pending dependent leaves
// pending or gains a wait takes its entry along: a cancelled, retried, deleted or joined
// dependent is not released by the completion. A dependent whose RunAt is ahead has an entry
// that is not direct.
func TestDirectEntries(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	root, _ := claimedRoot(t, s, 1) // the first dependent is inline: no entry
	ps := make([]store.InsertParams, 6)
	for i := range ps {
		ps[i] = job("dep")
		ps[i].DependsOn = []int64{root.ID}
	}
	ps[5].RunAt = time.Now().Add(time.Hour)
	rows := insertAll(t, s, ps...)
	plain, cancelled, retried, deleted, joined, later := rows[0], rows[1], rows[2], rows[3], rows[4], rows[5]
	entries := relEntries(t, s, root.ID)
	key := func(r *store.JobRow) string { return strconv.FormatInt(r.ID, 10) }
	for _, r := range rows[:5] {
		if e := entries[key(r)]; e == "" || e[0] != 0 {
			t.Fatalf("entry of %d = %q, want a direct one", r.ID, e)
		}
	}
	if e := entries[key(later)]; e == "" || e[0] == 0 {
		t.Fatalf("entry of the later dependent = %q, want one that is not direct", e)
	}

	if _, err := s.Cancel(ctx, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Retry(ctx, retried.ID); err != nil {
		t.Fatal(err)
	}
	run, err := s.Claim(ctx, store.ClaimParams{Queue: "default", Kinds: []string{"dep"}, Max: 10, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(run) != 1 || run[0].ID != retried.ID {
		t.Fatalf("claim after the retry: %v, %v; want the retried dependent alone", run, err)
	}
	if _, err := s.Complete(ctx, []store.Outcome{{ID: run[0].ID, Fence: run[0].Fence, State: store.StateCompleted}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, deleted.ID); err != nil {
		t.Fatal(err)
	}
	second := job("second")
	second.DependencyOf = joined.ID
	insertAll(t, s, second)
	entries = relEntries(t, s, root.ID)
	if len(entries) != 2 || entries[key(plain)] == "" || entries[key(later)] == "" {
		t.Errorf("entries %q, want only the plain and the later dependents'", entries)
	}

	if _, err := s.Complete(ctx, []store.Outcome{{ID: root.ID, Fence: root.Fence, State: store.StateCompleted}}); err != nil {
		t.Fatal(err)
	}
	want := map[*store.JobRow]store.State{plain: store.StateAvailable, cancelled: store.StateCancelled,
		retried: store.StateCompleted, joined: store.StatePending, later: store.StateScheduled}
	for r, st := range want {
		if got := get(t, s, r.ID).State; got != st {
			t.Errorf("dependent %d is %s after the root's completion, want %s", r.ID, got, st)
		}
	}
	if _, err := s.Get(ctx, deleted.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the deleted dependent after the root's completion: %v, want not found", err)
	}
	if keys := depKeys(t, s); len(keys) != 0 {
		t.Fatalf("edges left: %v", keys)
	}
}

// A dependent in the empty queue (the store takes one; the client names it "default") gets no
// release entry: its entry would start with the byte that marks a direct one.
func TestNoEntryInTheEmptyQueue(t *testing.T) {
	s := open(t)
	root, _ := claimedRoot(t, s, 1) // the first dependent is inline: no entry
	p := job("dep")
	p.Queue, p.DependsOn = "", []int64{root.ID}
	later := p
	later.RunAt = time.Now().Add(time.Hour)
	rows := insertAll(t, s, p, later)
	if entries := relEntries(t, s, root.ID); len(entries) != 0 {
		t.Fatalf("entries %q, want none", entries)
	}
	if _, err := s.Complete(t.Context(), []store.Outcome{{ID: root.ID, Fence: root.Fence, State: store.StateCompleted}}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []store.State{store.StateAvailable, store.StateScheduled} {
		if got := get(t, s, rows[i].ID).State; got != want {
			t.Errorf("dependent %d in the empty queue is %s after the root's completion, want %s", rows[i].ID, got, want)
		}
	}
}
