package storetest

import (
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

var queueTests = map[string]func(*testing.T, *env){
	"Stats":       testQueueStats,
	"Load":        testQueueLoad,
	"PauseResume": testPauseResume,
}

func (e *env) stats() map[string]store.QueueStats {
	e.t.Helper()
	list, err := e.s.QueueStats(e.ctx)
	if err != nil {
		e.t.Fatalf("QueueStats: %v", err)
	}
	m := make(map[string]store.QueueStats, len(list))
	for _, q := range list {
		if _, dup := m[q.Queue]; dup {
			e.t.Fatalf("QueueStats lists %q twice", q.Queue)
		}
		m[q.Queue] = q
	}
	return m
}

func testQueueStats(t *testing.T, e *env) {
	if got := e.stats(); len(got) != 0 {
		t.Fatalf("an empty store has stats %+v", got)
	}
	oldest := e.now()
	e.insert(job("k"), job("k"), job("k"), job("k"))
	e.advance(time.Minute)
	// In q2 the oldest job has the lowest priority: OldestAvailable is about time, not order.
	urgent, old := inQueue("q2"), inQueue("q2")
	urgent.Priority = 5
	old.Priority, old.RunAt = -1, oldest.Add(-time.Hour)
	e.insert(urgent, old)
	// In q3 the oldest job is of the second kind, behind a more urgent one of its own kind.
	q3 := func(kind string, prio int, runAt time.Time) store.InsertParams {
		p := inQueue("q3")
		p.Kind, p.Priority, p.RunAt = kind, prio, runAt
		return p
	}
	e.insert(q3("a", 0, e.now()), q3("b", 3, e.now()))
	e.insertOne(q3("b", 0, oldest.Add(-2*time.Hour)))
	p := job("k")
	p.RunAt = e.now().Add(time.Hour)
	e.insertOne(p)
	run := e.claim("default", 2)
	e.completeOK(store.Outcome{ID: run[0].ID, Fence: run[0].Fence, State: store.StateCompleted})
	if err := e.s.PauseQueue(e.ctx, "idle"); err != nil {
		t.Fatal(err)
	}

	got := e.stats()
	if len(got) != 4 {
		t.Fatalf("stats for %d queues, want default, q2, q3 and the paused idle: %+v", len(got), got)
	}
	want := map[store.State]int64{
		store.StateAvailable: 2, store.StateScheduled: 1, store.StateRunning: 1, store.StateCompleted: 1,
	}
	def := got["default"]
	for _, s := range store.States {
		if _, listed := def.Counts[s]; !listed {
			t.Errorf("default: %s not listed; every state is, zero or not (counts %v)", s, def.Counts)
		}
		if def.Counts[s] != want[s] {
			t.Errorf("default: %s = %d, want %d (counts %v)", s, def.Counts[s], want[s], def.Counts)
		}
	}
	// The two jobs left available were inserted at oldest; claiming took the other two.
	wantTime(t, "default OldestAvailable", def.OldestAvailable, oldest)
	if def.Paused {
		t.Error("default reported paused")
	}
	if q2 := got["q2"]; q2.Counts[store.StateAvailable] != 2 || !q2.OldestAvailable.Equal(oldest.Add(-time.Hour)) {
		t.Errorf("q2: %+v; want 2 available, the oldest from %v", q2, oldest.Add(-time.Hour))
	}
	if q3 := got["q3"]; q3.Counts[store.StateAvailable] != 3 || !q3.OldestAvailable.Equal(oldest.Add(-2*time.Hour)) {
		t.Errorf("q3: %+v; want 3 available, the oldest from %v", q3, oldest.Add(-2*time.Hour))
	}
	if idle := got["idle"]; !idle.Paused || idle.Counts[store.StateAvailable] != 0 || !idle.OldestAvailable.IsZero() {
		t.Errorf("idle: %+v; want paused, empty", idle)
	}
}

func testPauseResume(t *testing.T, e *env) {
	e.insertOne(job("k"))
	for range 2 { // both are idempotent
		if err := e.s.PauseQueue(e.ctx, "default"); err != nil {
			t.Fatalf("PauseQueue: %v", err)
		}
	}
	if !e.stats()["default"].Paused {
		t.Fatal("paused queue not reported paused")
	}
	if n := len(e.claim("default", 1)); n != 0 {
		t.Fatal("claimed from a paused queue")
	}
	for range 2 {
		if err := e.s.ResumeQueue(e.ctx, "default"); err != nil {
			t.Fatalf("ResumeQueue: %v", err)
		}
	}
	if e.stats()["default"].Paused {
		t.Fatal("resumed queue still reported paused")
	}
	e.claimOne()
	if err := e.s.ResumeQueue(e.ctx, "never-paused"); err != nil {
		t.Fatalf("ResumeQueue of an unknown queue: %v", err)
	}
}

// A store's QueueLoad agrees with its QueueStats on the queue's available and running jobs.
func testQueueLoad(t *testing.T, e *env) {
	loader, ok := e.s.(store.QueueLoader)
	if !ok {
		t.Skip("store does not implement store.QueueLoader")
	}
	e.insert(job("k"), job("k"), job("k"), inQueue("other"))
	c := e.claim("default", 1)
	e.completeOK(store.Outcome{ID: c[0].ID, Fence: c[0].Fence, State: store.StateCompleted})
	e.claim("default", 1)
	if err := e.s.PauseQueue(e.ctx, "default"); err != nil {
		t.Fatal(err)
	}
	got, err := loader.QueueLoad(e.ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	if got.Counts[store.StateAvailable] != 1 || got.Counts[store.StateRunning] != 1 || !got.Paused {
		t.Fatalf("QueueLoad = %+v; want 1 available, 1 running, paused", got)
	}
	if none, err := loader.QueueLoad(e.ctx, "nobody"); err != nil || none.Counts[store.StateAvailable] != 0 || none.Paused {
		t.Fatalf("QueueLoad of an unknown queue = %+v, %v", none, err)
	}
}
