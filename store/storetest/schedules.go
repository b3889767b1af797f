package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

var scheduleTests = map[string]func(*testing.T, *env){
	"RoundTrip":              testScheduleRoundTrip,
	"UpsertKeeps":            testScheduleUpsertKeeps,
	"TimingChange":           testScheduleTimingChange,
	"DeleteCancels":          testScheduleDeleteCancels,
	"CancelNotifies":         testScheduleCancelNotifies,
	"Pause":                  testSchedulePause,
	"NotFound":               testScheduleNotFound,
	"EmptyNameNotFound":      testScheduleEmptyNameNotFound,
	"UpsertConcurrent":       testScheduleUpsertConcurrent,
	"Plan":                   testSchedulePlan,
	"PlanUniqueKey":          testSchedulePlanUnique,
	"PlanDeleted":            testSchedulePlanDeleted,
	"PlanRace":               testSchedulePlanRace,
	"JobScheduleField":       testJobScheduleField,
	"DueOccurrenceCancelled": testDueOccurrenceCancelled,
	"OldQueueCancelled":      testOldQueueOccurrenceCancelled,
}

// cronSchedule is a schedule with every field set; stores never interpret Expr or Zone.
func cronSchedule(name string) store.Schedule {
	return store.Schedule{
		Name: name, Expr: "*/5 * * * * *", Zone: "Europe/Berlin", Kind: "k", Queue: "default",
		Args: []byte(`{"n":1}`), Priority: 2, MaxAttempts: 4, Tags: []string{"cron", "t"},
		Missed: store.MissedSkip,
	}
}

// occurrence is a job as a planner enqueues it for schedule name at `at`, without a unique key:
// what keeps it from being inserted twice must be PlanSchedule's compare-and-set alone.
func occurrence(name string, at time.Time) store.InsertParams {
	p := job("k")
	p.RunAt, p.Schedule = at, name
	return p
}

// never is the LastPlanned of a schedule never planned.
var never time.Time

func (e *env) upsertSchedule(sc store.Schedule) store.Schedule {
	e.t.Helper()
	got, err := e.s.UpsertSchedule(e.ctx, sc)
	if err != nil {
		e.t.Fatalf("UpsertSchedule(%s): %v", sc.Name, err)
	}
	return got
}

func (e *env) getSchedule(name string) store.Schedule {
	e.t.Helper()
	got, err := e.s.GetSchedule(e.ctx, name)
	if err != nil {
		e.t.Fatalf("GetSchedule(%s): %v", name, err)
	}
	return got
}

func (e *env) scheduleNames() []string {
	e.t.Helper()
	list, err := e.s.ListSchedules(e.ctx)
	if err != nil {
		e.t.Fatalf("ListSchedules: %v", err)
	}
	names := []string{}
	for _, sc := range list {
		names = append(names, sc.Name)
	}
	return names
}

func (e *env) deleteSchedule(name string) {
	e.t.Helper()
	if err := e.s.DeleteSchedule(e.ctx, name); err != nil {
		e.t.Fatalf("DeleteSchedule(%s): %v", name, err)
	}
}

func (e *env) pauseSchedule(name string, paused bool) {
	e.t.Helper()
	if err := e.s.SetSchedulePaused(e.ctx, name, paused); err != nil {
		e.t.Fatalf("SetSchedulePaused(%s, %v): %v", name, paused, err)
	}
}

func (e *env) plan(name string, from, to time.Time, jobs ...store.InsertParams) bool {
	e.t.Helper()
	planned, err := e.s.PlanSchedule(e.ctx, name, from, to, jobs)
	if err != nil {
		e.t.Fatalf("PlanSchedule(%s, %v, %v): %v", name, from, to, err)
	}
	return planned
}

// planned returns the jobs that name schedule name, by id.
func (e *env) planned(name string) []*store.JobRow {
	e.t.Helper()
	var out []*store.JobRow
	for _, j := range e.listAll(store.ListParams{}) {
		if j.Schedule == name {
			out = append(out, j)
		}
	}
	return out
}

func sameSchedule(t *testing.T, what string, got, want store.Schedule) {
	t.Helper()
	if got.Name != want.Name || got.Expr != want.Expr || got.Zone != want.Zone || got.Kind != want.Kind ||
		got.Queue != want.Queue || got.Priority != want.Priority || got.MaxAttempts != want.MaxAttempts ||
		got.Missed != want.Missed || got.Paused != want.Paused || !slices.Equal(got.Tags, want.Tags) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
	wantJSON(t, what+": Args", got.Args, want.Args)
	wantTime(t, what+": LastPlanned", got.LastPlanned, want.LastPlanned)
	wantTime(t, what+": CreatedAt", got.CreatedAt, want.CreatedAt)
	wantTime(t, what+": UpdatedAt", got.UpdatedAt, want.UpdatedAt)
}

// wantCancelledBy checks that a planned job was cancelled at `at`, with why as its last error.
func wantCancelledBy(t *testing.T, j *store.JobRow, at time.Time, why string) {
	t.Helper()
	wantFinalized(t, j, store.StateCancelled, at)
	sameErrors(t, j.Errors, []store.AttemptError{{Attempt: j.Attempt, At: at, Error: why}})
}

func testScheduleRoundTrip(t *testing.T, e *env) {
	if got := e.scheduleNames(); len(got) != 0 {
		t.Fatalf("a new store has schedules %q", got)
	}
	b := cronSchedule("b")
	want := b
	want.CreatedAt, want.UpdatedAt = e.now(), e.now()
	sameSchedule(t, "created", e.upsertSchedule(b), want)
	sameSchedule(t, "Get", e.getSchedule("b"), want)

	e.advance(time.Minute)
	e.upsertSchedule(store.Schedule{Name: "a", Expr: "@every 90s", Zone: "UTC", Kind: "a", Queue: "q2",
		Args: []byte(`{"x":[1,2]}`), Priority: -1, MaxAttempts: 1, Missed: store.MissedRunOnce})
	e.upsertSchedule(cronSchedule("B"))
	// By name in byte order: "B" before "a", whatever the database's collation.
	if got := e.scheduleNames(); !slices.Equal(got, []string{"B", "a", "b"}) {
		t.Fatalf("ListSchedules = %q, want [B a b]", got)
	}

	// Replaced with the same timing: every other field is the new one; CreatedAt stays.
	e.advance(time.Minute)
	b.Kind, b.Queue, b.Args, b.Priority, b.MaxAttempts = "b", "q3", []byte(`{"n":2}`), 7, 9
	b.Tags, b.Missed = []string{"other"}, store.MissedRunOnce
	want = b
	want.CreatedAt, want.UpdatedAt = epoch, e.now()
	sameSchedule(t, "replaced", e.upsertSchedule(b), want)
	sameSchedule(t, "Get after replacing", e.getSchedule("b"), want)

	e.deleteSchedule("b")
	if _, err := e.s.GetSchedule(e.ctx, "b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetSchedule after delete = %v, want ErrNotFound", err)
	}
	if got := e.scheduleNames(); !slices.Equal(got, []string{"B", "a"}) {
		t.Fatalf("ListSchedules after delete = %q, want [B a]", got)
	}
}

// An upsert keeps the stored Paused and LastPlanned, whatever it is given, while the timing
// stays; a new schedule takes Paused from its params and starts never planned.
func testScheduleUpsertKeeps(t *testing.T, e *env) {
	sc := cronSchedule("s")
	e.upsertSchedule(sc)
	last := e.now().Add(90*time.Second + 123*time.Microsecond)
	if !e.plan("s", never, last) {
		t.Fatal("PlanSchedule of a new schedule from the zero time: not planned")
	}
	e.pauseSchedule("s", true)
	e.advance(time.Minute)
	sc.Tags, sc.Paused, sc.LastPlanned = nil, false, e.now().Add(time.Hour)
	for what, got := range map[string]store.Schedule{"upserted": e.upsertSchedule(sc), "Get": e.getSchedule("s")} {
		if !got.Paused {
			t.Errorf("%s: Paused lost", what)
		}
		wantTime(t, what+": LastPlanned", got.LastPlanned, last)
	}

	p := cronSchedule("p")
	p.Paused, p.LastPlanned = true, e.now()
	if got := e.upsertSchedule(p); !got.Paused || !got.LastPlanned.IsZero() {
		t.Errorf("created with Paused and LastPlanned: Paused %v, LastPlanned %v; want true, zero", got.Paused, got.LastPlanned)
	}
}

// A new Expr or Zone cancels the jobs the schedule planned that are still scheduled (not those
// that started, nor other schedules' or plain jobs) and makes LastPlanned now.
func testScheduleTimingChange(t *testing.T, e *env) {
	e.upsertSchedule(cronSchedule("s"))
	e.upsertSchedule(cronSchedule("other"))
	now := e.now()
	if !e.plan("s", never, now.Add(10*time.Second), occurrence("s", now), occurrence("s", now),
		occurrence("s", now.Add(5*time.Second)), occurrence("s", now.Add(10*time.Second))) {
		t.Fatal("not planned")
	}
	e.plan("other", never, now.Add(5*time.Second), occurrence("other", now.Add(5*time.Second)))
	plain := job("k")
	plain.RunAt = now.Add(5 * time.Second)
	plainJob := e.insertOne(plain)
	jobs := e.planned("s")
	running := e.claimOne()
	done := e.claimOne()
	e.completeOK(store.Outcome{ID: done.ID, Fence: done.Fence, State: store.StateCompleted})
	if running.ID != jobs[0].ID || done.ID != jobs[1].ID {
		t.Fatalf("claimed %d and %d, want the due occurrences %d and %d", running.ID, done.ID, jobs[0].ID, jobs[1].ID)
	}

	e.advance(time.Second)
	changed := cronSchedule("s")
	changed.Expr = "*/7 * * * * *"
	wantTime(t, "LastPlanned after a new Expr", e.upsertSchedule(changed).LastPlanned, e.now())
	wantTime(t, "stored LastPlanned", e.getSchedule("s").LastPlanned, e.now())
	for _, j := range jobs[2:] {
		wantCancelledBy(t, e.get(j.ID), e.now(), store.ScheduleChangedError("s"))
	}
	wantState(t, e.get(running.ID), store.StateRunning)
	wantState(t, e.get(done.ID), store.StateCompleted)
	wantState(t, e.planned("other")[0], store.StateScheduled)
	wantState(t, e.get(plainJob.ID), store.StateScheduled)
	counts := e.stats()["default"].Counts
	if counts[store.StateCancelled] != 2 || counts[store.StateScheduled] != 2 {
		t.Errorf("QueueStats counts %v, want 2 cancelled and 2 scheduled", counts)
	}

	// The same timing again cancels nothing and keeps LastPlanned; a new Zone is a new timing.
	e.advance(time.Second)
	next := e.now().Add(7 * time.Second)
	if !e.plan("s", e.getSchedule("s").LastPlanned, next, occurrence("s", next)) {
		t.Fatal("planning the new timing: not planned")
	}
	waiting := e.planned("s")[4]
	changed.Args = []byte(`{"n":3}`)
	wantTime(t, "LastPlanned after new Args", e.upsertSchedule(changed).LastPlanned, next)
	wantState(t, e.get(waiting.ID), store.StateScheduled)
	e.advance(time.Second)
	changed.Zone = "UTC"
	wantTime(t, "LastPlanned after a new Zone", e.upsertSchedule(changed).LastPlanned, e.now())
	wantCancelledBy(t, e.get(waiting.ID), e.now(), store.ScheduleChangedError("s"))
}

// Removing a schedule cancels what it planned that has not started; the jobs keep its name.
func testScheduleDeleteCancels(t *testing.T, e *env) {
	e.upsertSchedule(cronSchedule("s"))
	now := e.now()
	e.plan("s", never, now.Add(5*time.Second), occurrence("s", now), occurrence("s", now.Add(5*time.Second)))
	jobs := e.planned("s")
	run := e.claimOne()
	e.advance(time.Second)
	e.deleteSchedule("s")
	wantState(t, e.get(run.ID), store.StateRunning)
	waiting := e.get(jobs[1].ID)
	wantCancelledBy(t, waiting, e.now(), store.ScheduleRemovedError("s"))
	if waiting.Schedule != "s" {
		t.Errorf("cancelled job's Schedule = %q, want s", waiting.Schedule)
	}
	if err := e.s.DeleteSchedule(e.ctx, "s"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second DeleteSchedule = %v, want ErrNotFound", err)
	}
}

// Jobs cancelled by an edit or a removal are announced as every cancellation is.
func testScheduleCancelNotifies(t *testing.T, e *env) {
	ch := e.subscribe(e.ctx)
	e.upsertSchedule(cronSchedule("s"))
	now := e.now()
	e.plan("s", never, now.Add(10*time.Second), occurrence("s", now.Add(5*time.Second)), occurrence("s", now.Add(10*time.Second)))
	changed := cronSchedule("s")
	changed.Expr = "@every 1m"
	last := e.upsertSchedule(changed).LastPlanned
	awaitFinal(t, ch, ids(e.planned("s"))...)

	e.plan("s", last, last.Add(time.Minute), occurrence("s", last.Add(time.Minute)))
	e.deleteSchedule("s")
	awaitFinal(t, ch, e.planned("s")[2].ID)
}

// awaitFinal waits for a TopicFinal notification of every id, in any order.
func awaitFinal(t *testing.T, ch <-chan store.Notification, ids ...int64) {
	t.Helper()
	left := slices.Clone(ids)
	if len(left) == 0 {
		t.Fatal("awaitFinal: no ids")
	}
	await(t, ch, func(n store.Notification) bool {
		if n.Topic == store.TopicFinal {
			left = slices.DeleteFunc(left, func(id int64) bool { return id == n.JobID })
		}
		return len(left) == 0
	})
}

func testSchedulePause(t *testing.T, e *env) {
	created := e.upsertSchedule(cronSchedule("s"))
	e.advance(time.Minute)
	for _, paused := range []bool{true, true, false} {
		e.pauseSchedule("s", paused)
		got := e.getSchedule("s")
		if got.Paused != paused {
			t.Errorf("after SetSchedulePaused(%v): Paused %v", paused, got.Paused)
		}
		wantTime(t, "UpdatedAt", got.UpdatedAt, created.UpdatedAt)
	}
}

func testScheduleNotFound(t *testing.T, e *env) {
	if _, err := e.s.GetSchedule(e.ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetSchedule = %v, want ErrNotFound", err)
	}
	if err := e.s.DeleteSchedule(e.ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteSchedule = %v, want ErrNotFound", err)
	}
	if err := e.s.SetSchedulePaused(e.ctx, "nope", true); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetSchedulePaused = %v, want ErrNotFound", err)
	}
	if got := e.scheduleNames(); len(got) != 0 {
		t.Errorf("failed calls left schedules %q", got)
	}
}

// No schedule is named "": asking for it is ErrNotFound, never another schedule.
func testScheduleEmptyNameNotFound(t *testing.T, e *env) {
	e.upsertSchedule(cronSchedule("a"))
	if got, err := e.s.GetSchedule(e.ctx, ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetSchedule(\"\") = %q, %v; want ErrNotFound", got.Name, err)
	}
}

// Concurrent upserts of one new name all succeed, and one of them is what is stored.
func testScheduleUpsertConcurrent(t *testing.T, e *env) {
	const writers = 8
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			sc := cronSchedule("s")
			sc.Expr = fmt.Sprintf("%d * * * * *", i)
			if _, err := e.s.UpsertSchedule(e.ctx, sc); err != nil {
				t.Errorf("UpsertSchedule: %v", err)
			}
		})
	}
	wg.Wait()
	if got := e.scheduleNames(); !slices.Equal(got, []string{"s"}) {
		t.Fatalf("ListSchedules = %q, want [s]", got)
	}
	var expr int
	if _, err := fmt.Sscanf(e.getSchedule("s").Expr, "%d * * * * *", &expr); err != nil || expr < 0 || expr >= writers {
		t.Fatalf("stored Expr %q is none of the upserts'", e.getSchedule("s").Expr)
	}
}

// An occurrence that is due but has not started — a claim that took nothing may have made it
// available — is cancelled with the rest when the schedule's timing changes or it is removed.
func testDueOccurrenceCancelled(t *testing.T, e *env) {
	for _, remove := range []bool{false, true} {
		name := "due"
		if remove {
			name = "due-removed"
		}
		e.upsertSchedule(cronSchedule(name))
		at := e.now().Add(5 * time.Second)
		if !e.plan(name, never, at, occurrence(name, at)) {
			t.Fatal("not planned")
		}
		e.advance(10 * time.Second)
		// A node without the kind claims the queue: nothing is taken, and a store may make the
		// due job available on the way.
		if got := e.claimParams(store.ClaimParams{Queue: "default", Kinds: []string{"other-kind"}, Max: 10, Owner: "n", LeaseFor: time.Minute}); len(got) != 0 {
			t.Fatalf("claimed %d jobs of another kind", len(got))
		}
		if remove {
			if err := e.s.DeleteSchedule(e.ctx, name); err != nil {
				t.Fatal(err)
			}
		} else {
			changed := cronSchedule(name)
			changed.Expr = "*/7 * * * * *"
			e.upsertSchedule(changed)
		}
		why := store.ScheduleChangedError(name)
		if remove {
			why = store.ScheduleRemovedError(name)
		}
		wantCancelledBy(t, e.planned(name)[0], e.now(), why)
	}
	if counts := e.stats()["default"].Counts; counts[store.StateCancelled] != 2 || counts[store.StateAvailable] != 0 || counts[store.StateScheduled] != 0 {
		t.Fatalf("counts %v; want the 2 occurrences cancelled", counts)
	}
}

// An occurrence planned into the schedule's queue, due and never started, is cancelled by a
// later change of timing, or the schedule's removal, after the schedule moved to another queue.
func testOldQueueOccurrenceCancelled(t *testing.T, e *env) {
	for _, remove := range []bool{false, true} {
		name := "moved"
		if remove {
			name = "moved-removed"
		}
		sc := cronSchedule(name)
		sc.Queue = "q1"
		e.upsertSchedule(sc)
		occ := occurrence(name, e.now())
		occ.Queue = "q1"
		if !e.plan(name, never, e.now(), occ) {
			t.Fatal("not planned")
		}
		e.advance(time.Second)
		sc.Queue = "q2"
		e.upsertSchedule(sc)
		if remove {
			if err := e.s.DeleteSchedule(e.ctx, name); err != nil {
				t.Fatal(err)
			}
		} else {
			sc.Expr = "*/7 * * * * *"
			e.upsertSchedule(sc)
		}
		for _, j := range e.planned(name) {
			if j.State != store.StateCancelled {
				t.Errorf("removed %v: occurrence %d in %s is %s, want cancelled", remove, j.ID, j.Queue, j.State)
			}
		}
	}
}
