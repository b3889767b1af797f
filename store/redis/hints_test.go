package redis

import (
	"testing"
	"time"
	"unsafe"

	"github.com/rotahq/rota/internal/redistest"
	"github.com/rotahq/rota/store"
)

// A completion through the Store that claimed the job goes by the claim's hint; one through
// another Store, of a job with a unique key, or with a fence its hint was not taken under reads
// the job whole. All end their jobs alike (state, the indexes of running jobs, the workflow's
// counts), a stale fence is refused either way, and a hint goes with the first completion its
// Store sends for the job (only that of the job completed elsewhere is left).
func TestCompletionHints(t *testing.T) {
	url := redistest.URL(t)
	a := open(t)
	b := openURL(t, url, a.cfg.namespace)
	ctx := t.Context()
	steps := []store.InsertParams{job("k"), job("k")}
	for i := range steps {
		steps[i].Workflow, steps[i].Step = "wf", []string{"one", "two"}[i]
	}
	unique := job("k")
	unique.UniqueKey = "u"
	rows := insertAll(t, a, append(steps, job("k"), unique)...)
	claimed, err := a.Claim(ctx, store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 4, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(claimed) != 4 {
		t.Fatalf("claim: %d jobs, %v", len(claimed), err)
	}
	fence := make(map[int64]int64)
	for _, r := range claimed {
		fence[r.ID] = r.Fence
	}
	if n := len(a.hints.m); n != 3 {
		t.Fatalf("%d hints after the claim, want 3 (not the unique job's)", n)
	}
	done := func(s *Store, id, fence int64) bool {
		t.Helper()
		applied, err := s.Complete(ctx, []store.Outcome{{ID: id, Fence: fence, State: store.StateCompleted}})
		if err != nil {
			t.Fatal(err)
		}
		return applied[0]
	}
	stepOne, stepTwo, plain, uniq := rows[0].ID, rows[1].ID, rows[2].ID, rows[3].ID
	if !done(a, stepOne, fence[stepOne]) || !done(b, plain, fence[plain]) || !done(a, uniq, fence[uniq]) {
		t.Fatal("a completion under the claim's fence was refused")
	}
	if done(a, stepTwo, fence[stepTwo]+1) {
		t.Fatal("a completion under a stale fence was applied")
	}
	if !done(a, stepTwo, fence[stepTwo]) {
		t.Fatal("the completion after the refused one was refused")
	}
	if _, left := a.hints.m[plain]; !left || len(a.hints.m) != 1 {
		t.Fatalf("hints left: %v, want only job %d's", a.hints.m, plain)
	}
	if n := countStates(t, a, rows); n[store.StateCompleted] != 4 {
		t.Fatalf("states %v, want all completed", n)
	}
	stats, err := a.QueueStats(ctx)
	if err != nil || len(stats) != 1 {
		t.Fatalf("queue stats: %v, %v", stats, err)
	}
	if c := stats[0].Counts; c[store.StateRunning] != 0 || c[store.StateCompleted] != 4 {
		t.Fatalf("queue counts %v, want 4 completed and none running", c)
	}
	for _, key := range []string{"run", "own:n", "kr:k", "sq:running:default"} {
		n, err := a.rdb.Exists(ctx, a.prefix+key).Result()
		if err != nil || n != 0 {
			t.Fatalf("%s left (%d, %v)", key, n, err)
		}
	}
	counts, err := a.rdb.HGetAll(ctx, a.prefix+"wfc:wf").Result()
	if err != nil || counts["completed"] != "2" || (counts["running"] != "" && counts["running"] != "0") {
		t.Fatalf("workflow counts %v (%v), want 2 completed and none running", counts, err)
	}
}

// A hint holds copies of the names it keeps, not the claimed row's text they were cut from,
// which would keep the row (its args and errors) alive while the job runs.
func TestHintsHoldCopies(t *testing.T) {
	s := open(t)
	insertAll(t, s, job("k"))
	rows, err := s.Claim(t.Context(), store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 1, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(rows) != 1 {
		t.Fatalf("claim: %v, %v", rows, err)
	}
	h, ok := s.hints.m[rows[0].ID]
	if !ok {
		t.Fatal("no hint for the claimed job")
	}
	if h.queue != rows[0].Queue || h.kind != rows[0].Kind {
		t.Fatalf("hint %+v for row queue %q kind %q", h, rows[0].Queue, rows[0].Kind)
	}
	if unsafe.StringData(h.queue) == unsafe.StringData(rows[0].Queue) || unsafe.StringData(h.kind) == unsafe.StringData(rows[0].Kind) {
		t.Fatal("the hint shares the claimed row's text")
	}
}
