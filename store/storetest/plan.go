package storetest

import (
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

// PlanSchedule is a compare-and-set of LastPlanned with the inserts of the occurrences it plans.

func testSchedulePlan(t *testing.T, e *env) {
	e.upsertSchedule(cronSchedule("s"))
	now := e.now()
	t1 := now.Add(10 * time.Second)
	if got := e.getSchedule("s").LastPlanned; !got.IsZero() {
		t.Fatalf("a new schedule's LastPlanned = %v, want the zero time", got)
	}
	if e.plan("s", now, t1, occurrence("s", t1)) {
		t.Fatal("planned a never-planned schedule from a time: want only the zero time to match")
	}
	if n := len(e.planned("s")); n != 0 {
		t.Fatalf("a failed compare inserted %d jobs", n)
	}

	if !e.plan("s", never, t1, occurrence("s", now), occurrence("s", t1)) {
		t.Fatal("PlanSchedule from the zero time: not planned")
	}
	jobs := e.planned("s")
	if len(jobs) != 2 {
		t.Fatalf("%d jobs planned, want 2", len(jobs))
	}
	wantState(t, jobs[0], store.StateAvailable)
	wantState(t, jobs[1], store.StateScheduled)
	wantTime(t, "RunAt", jobs[1].RunAt, t1)
	wantTime(t, "LastPlanned", e.getSchedule("s").LastPlanned, t1)

	// A stale `from`, or one a microsecond off, is not `from`: nothing changes.
	t2 := t1.Add(5*time.Second + 250*time.Microsecond)
	for _, from := range []time.Time{never, now, t1.Add(time.Microsecond), t1.Add(-time.Microsecond)} {
		if e.plan("s", from, t2, occurrence("s", t2)) {
			t.Errorf("planned from %v while LastPlanned is %v", from, t1)
		}
	}
	if n := len(e.planned("s")); n != 2 {
		t.Fatalf("failed compares inserted jobs: %d, want 2", n)
	}
	wantTime(t, "LastPlanned after failed compares", e.getSchedule("s").LastPlanned, t1)

	// Moving LastPlanned with no jobs (skipped occurrences) is a plan too; times keep microseconds.
	if !e.plan("s", t1, t2) {
		t.Fatal("PlanSchedule without jobs: not planned")
	}
	wantTime(t, "LastPlanned", e.getSchedule("s").LastPlanned, t2)

	// A job that does not name the schedule is refused, and the refusal changes nothing.
	if _, err := e.s.PlanSchedule(e.ctx, "s", t2, t2.Add(time.Second), []store.InsertParams{occurrence("x", t2)}); err == nil {
		t.Error("PlanSchedule took a job naming another schedule")
	}
	wantTime(t, "LastPlanned after a refusal", e.getSchedule("s").LastPlanned, t2)
}

// A planned job whose unique key is held is not inserted again; the plan still succeeds.
func testSchedulePlanUnique(t *testing.T, e *env) {
	e.upsertSchedule(cronSchedule("s"))
	at := e.now().Add(time.Minute)
	held := occurrence("s", at)
	held.UniqueKey = "cron:s@1"
	existing := e.insertOne(held)
	fresh := occurrence("s", at)
	fresh.UniqueKey = "cron:s@2"
	if !e.plan("s", never, at, held, fresh) {
		t.Fatal("not planned")
	}
	jobs := e.planned("s")
	if len(jobs) != 2 || jobs[0].ID != existing.ID || jobs[1].UniqueKey != "cron:s@2" {
		t.Fatalf("jobs after planning a held key: %+v", jobs)
	}
}

// A removed or unknown schedule is never planned, whatever `from` is.
func testSchedulePlanDeleted(t *testing.T, e *env) {
	e.upsertSchedule(cronSchedule("s"))
	t1 := e.now().Add(5 * time.Second)
	e.plan("s", never, t1, occurrence("s", t1))
	e.deleteSchedule("s")
	t2 := t1.Add(5 * time.Second)
	for _, from := range []time.Time{t1, never} {
		if e.plan("s", from, t2, occurrence("s", t2)) {
			t.Errorf("planned a deleted schedule from %v", from)
		}
	}
	if e.plan("unknown", never, t2, occurrence("unknown", t2)) {
		t.Error("planned a schedule that never existed")
	}
	if n := len(e.listAll(store.ListParams{})); n != 1 {
		t.Fatalf("%d jobs, want the one planned before the delete", n)
	}
}

// A job's Schedule is stored by every insert path and read back by Get, List and Claim.
func testJobScheduleField(t *testing.T, e *env) {
	named, key := job("k"), keyed("x")
	named.Schedule, key.Schedule = "s", "s"
	rows := e.insert(named, job("k"), key)
	want := []string{"s", "", "s"}
	for i, j := range rows {
		if j.Schedule != want[i] {
			t.Errorf("Insert returned Schedule %q, want %q", j.Schedule, want[i])
		}
		sameJob(t, e.get(j.ID), j)
	}
	// Batches large enough for a store's bulk path (PostgreSQL's COPY) keep it too.
	many := make([]store.InsertParams, 250)
	for i := range many {
		many[i] = job("k")
		if i%2 == 0 {
			many[i].Schedule = "s"
		}
	}
	byID := make(map[int64]string)
	for i, j := range e.insert(many...) {
		if j.Schedule != many[i].Schedule {
			t.Fatalf("bulk Insert returned Schedule %q, want %q", j.Schedule, many[i].Schedule)
		}
		byID[j.ID] = many[i].Schedule
	}
	for _, j := range e.listAll(store.ListParams{}) {
		if s, ok := byID[j.ID]; ok && j.Schedule != s {
			t.Fatalf("job %d listed with Schedule %q, want %q", j.ID, j.Schedule, s)
		}
	}
	if c := e.claimOne(); c.Schedule != "s" {
		t.Errorf("Claim returned Schedule %q, want s", c.Schedule)
	}
}
