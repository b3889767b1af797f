package planner

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/rotahq/rota/cron"
	"github.com/rotahq/rota/store"
)

// check compares what was planned for schedule name with its timing: every occurrence of expr in
// (after, until] must have been planned exactly once, as the log of successful plans says and as
// the store's jobs that are not cancelled say, each as a job due at its occurrence; and nothing
// else. It returns what is wrong, so a test can also show that it catches a planner at fault.
func (b *bundle) check(name, expr string, after, until time.Time) []string {
	b.t.Helper()
	return b.checkRange(name, expr, after, until, false)
}

// checkSince is check of what was planned for occurrences after `after` only: what was planned
// before an outage, and the outage's catch-up job, are left out.
func (b *bundle) checkSince(name, expr string, after, until time.Time) []string {
	b.t.Helper()
	return b.checkRange(name, expr, after, until, true)
}

func (b *bundle) checkRange(name, expr string, after, until time.Time, since bool) []string {
	b.t.Helper()
	sched, err := cron.Parse(expr, "UTC")
	if err != nil {
		b.t.Fatal(err)
	}
	want := make(map[int64]bool)
	for at := sched.Next(after); !at.IsZero() && !at.After(until); at = sched.Next(at) {
		want[at.Unix()] = true
	}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	logged := make(map[int64]int)
	for _, at := range b.log.of(name) {
		if !since || at.After(after) {
			logged[at.Unix()]++
		}
	}
	active := make(map[int64]int)
	for _, p := range b.jobs(name) {
		if p.job.State == store.StateCancelled || since && !p.occurrence.After(after) {
			continue
		}
		active[p.occurrence.Unix()]++
		if !p.job.RunAt.Equal(p.occurrence) {
			bad("job %d for %v is due at %v, not at its occurrence", p.job.ID, p.occurrence, p.job.RunAt)
		}
		if key := "cron:" + name + "@" + strconv.FormatInt(p.occurrence.Unix(), 10); p.job.UniqueKey != key {
			bad("job %d has unique key %q, want %q", p.job.ID, p.job.UniqueKey, key)
		}
	}
	for what, got := range map[string]map[int64]int{"planned": logged, "jobs": active} {
		for at, n := range got {
			switch {
			case !want[at]:
				bad("%s: %v, which is not an occurrence in (%v, %v]", what, time.Unix(at, 0).UTC(), after, until)
			case n > 1:
				bad("%s: %v %d times", what, time.Unix(at, 0).UTC(), n)
			}
		}
		for at := range want {
			if got[at] == 0 {
				bad("%s: occurrence %v missing", what, time.Unix(at, 0).UTC())
			}
		}
	}
	return problems
}

// mustCheck fails the test on any problem check finds.
func (b *bundle) mustCheck(name, expr string, after, until time.Time) {
	b.t.Helper()
	failOn(b.t, b.check(name, expr, after, until))
}

// mustCheckSince fails the test on any problem checkSince finds.
func (b *bundle) mustCheckSince(name, expr string, after, until time.Time) {
	b.t.Helper()
	failOn(b.t, b.checkSince(name, expr, after, until))
}

func failOn(t *testing.T, problems []string) {
	t.Helper()
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) > 0 {
		t.FailNow()
	}
}

// catchUps returns the jobs of a schedule due at another time than their occurrence: the
// catch-up jobs of missed occurrences.
func (b *bundle) catchUps(name string) []planned {
	b.t.Helper()
	var out []planned
	for _, p := range b.jobs(name) {
		if !p.job.RunAt.Equal(p.occurrence) {
			out = append(out, p)
		}
	}
	return out
}
