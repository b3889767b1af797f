package planner

import (
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/cron"
	"github.com/rotahq/rota/store"
)

const every5s = "*/5 * * * * *"

// A pass plans each occurrence within the horizon once, as a scheduled job due at the occurrence;
// passes plan only what came into the horizon since.
func TestPlansOnceWithinHorizon(t *testing.T) {
	eachBackend(t, 1, func(t *testing.T, b *bundle) {
		sc := b.upsert("s", every5s, store.MissedRunOnce)
		b.pass(0)
		b.mustCheck("s", every5s, sc.CreatedAt, b.clk.Now().Add(time.Minute))
		for _, p := range b.jobs("s") {
			if p.job.State != store.StateScheduled {
				t.Errorf("job for %v is %s, want scheduled", p.occurrence, p.job.State)
			}
		}
		wantLastPlanned(t, b, "s", time.Date(2031, 3, 4, 5, 7, 5, 0, time.UTC))

		b.pass(0) // nothing new is due to be planned
		b.mustCheck("s", every5s, sc.CreatedAt, b.clk.Now().Add(time.Minute))
		for range 3 {
			b.clk.Advance(IntervalDefault)
			b.pass(0)
			b.mustCheck("s", every5s, sc.CreatedAt, b.clk.Now().Add(time.Minute))
		}
	})
}

// A new leader goes on from the stored LastPlanned: its first plan starts at the occurrence after
// it, and it plans nothing the old leader planned, nor a catch-up.
func TestNewLeaderContinues(t *testing.T) {
	eachBackend(t, 2, func(t *testing.T, b *bundle) {
		sc := b.upsert("s", every5s, store.MissedSkip)
		for range 3 {
			b.pass(0)
			b.clk.Advance(IntervalDefault)
		}
		last := b.schedule("s").LastPlanned
		before := len(b.log.of("s"))
		b.clk.Advance(30 * time.Second) // the old leader's lease runs out
		b.pass(1)
		got := b.log.of("s")
		if len(got) == before || !got[before].Equal(last.Add(5*time.Second)) {
			t.Fatalf("the new leader planned %v after LastPlanned %v", got[before:], last)
		}
		b.mustCheck("s", every5s, sc.CreatedAt, b.clk.Now().Add(time.Minute))
	})
}

// When no node planned for longer than the horizon, the missed occurrences give one catch-up job
// (run-once) due now, or none (skip); never one per missed occurrence. Planning then goes on as
// before.
func TestEveryoneDown(t *testing.T) {
	for _, policy := range []store.MissedPolicy{store.MissedRunOnce, store.MissedSkip} {
		t.Run(string(policy), func(t *testing.T) {
			eachBackend(t, 2, func(t *testing.T, b *bundle) {
				b.upsert("s", every5s, policy)
				b.pass(0)
				before := len(b.jobs("s"))
				b.clk.Advance(time.Hour + 2500*time.Millisecond)
				b.pass(1)
				now := b.clk.Now()
				wantCatchUps(t, b, policy, now)
				if n := len(b.jobs("s")) - before; n != 12+len(b.catchUps("s")) {
					t.Errorf("the pass after the outage planned %d jobs, want the 12 in the horizon and the catch-up", n)
				}
				b.mustCheckSince("s", every5s, now, now.Add(time.Minute))

				for range 3 {
					b.clk.Advance(IntervalDefault)
					b.pass(0)
				}
				wantCatchUps(t, b, policy, now)
				b.mustCheckSince("s", every5s, now, b.clk.Now().Add(time.Minute))
			})
		})
	}
}

// wantCatchUps checks the catch-up jobs of an outage that ended at `at`: one for run-once, for the
// last occurrence before `at` and due at `at`; none for skip.
func wantCatchUps(t *testing.T, b *bundle, policy store.MissedPolicy, at time.Time) {
	t.Helper()
	got := b.catchUps("s")
	if policy == store.MissedSkip {
		if len(got) != 0 {
			t.Fatalf("skip: %d catch-up jobs", len(got))
		}
		return
	}
	if len(got) != 1 {
		t.Fatalf("run-once: %d catch-up jobs, want 1", len(got))
	}
	if !got[0].job.RunAt.Equal(at) || !got[0].occurrence.Equal(at.Truncate(5*time.Second)) {
		t.Errorf("catch-up for %v due at %v, want the last missed occurrence, due at %v", got[0].occurrence, got[0].job.RunAt, at)
	}
}

// Editing the expression cancels the occurrences planned under the old one that have not started,
// and the next pass plans the new one from the edit on, instants the two share included.
func TestEditCancelsOldTiming(t *testing.T) {
	eachBackend(t, 1, func(t *testing.T, b *bundle) {
		b.upsert("s", every5s, store.MissedRunOnce)
		b.pass(0)
		b.clk.Advance(5 * time.Second)
		run, err := b.stores[0].Claim(t.Context(), store.ClaimParams{Queue: "default", Kinds: []string{"k"},
			Max: 1, Owner: "n", LeaseFor: time.Minute})
		if err != nil || len(run) != 1 {
			t.Fatalf("Claim = %d jobs, %v", len(run), err)
		}
		edited := b.upsert("s", "*/10 * * * * *", store.MissedRunOnce)
		b.pass(0)
		var active, cancelled []time.Time
		for _, p := range b.jobs("s") {
			switch {
			case p.job.ID == run[0].ID:
				if p.job.State != store.StateRunning {
					t.Errorf("the running occurrence is %s", p.job.State)
				}
			case p.job.State == store.StateCancelled:
				cancelled = append(cancelled, p.occurrence)
			default:
				active = append(active, p.occurrence)
			}
		}
		sched, _ := cron.Parse("*/10 * * * * *", "UTC")
		if want := sched.NextN(edited.LastPlanned, 6); !slices.EqualFunc(active, want, time.Time.Equal) {
			t.Errorf("planned after the edit: %v, want %v", active, want)
		}
		if len(cancelled) != 11 {
			t.Errorf("%d occurrences of the old timing cancelled, want the 11 not started", len(cancelled))
		}
	})
}

// A paused schedule is not planned; resumed, its missed occurrences follow its policy.
func TestPausedNotPlanned(t *testing.T) {
	eachBackend(t, 1, func(t *testing.T, b *bundle) {
		b.upsert("s", every5s, store.MissedRunOnce)
		if err := b.stores[0].SetSchedulePaused(t.Context(), "s", true); err != nil {
			t.Fatal(err)
		}
		for range 10 {
			b.pass(0)
			b.clk.Advance(IntervalDefault)
		}
		if got := b.jobs("s"); len(got) != 0 {
			t.Fatalf("a paused schedule got %d jobs", len(got))
		}
		if err := b.stores[0].SetSchedulePaused(t.Context(), "s", false); err != nil {
			t.Fatal(err)
		}
		b.pass(0)
		if got := b.catchUps("s"); len(got) != 1 {
			t.Fatalf("resumed run-once schedule: %d catch-up jobs, want 1", len(got))
		}
		b.mustCheckSince("s", every5s, b.clk.Now(), b.clk.Now().Add(time.Minute))
	})
}

func wantLastPlanned(t *testing.T, b *bundle, name string, want time.Time) {
	t.Helper()
	if got := b.schedule(name).LastPlanned; !got.Equal(want) {
		t.Errorf("LastPlanned = %v, want %v", got, want)
	}
}

// A schedule created (or given a new timing) just before an occurrence is first planned up to a
// pass interval later, after that occurrence: it was late, not missed, and runs once, now, under
// either policy.
func TestLateFirstPass(t *testing.T) {
	for _, policy := range []store.MissedPolicy{store.MissedRunOnce, store.MissedSkip} {
		t.Run(string(policy), func(t *testing.T) {
			eachBackend(t, 1, func(t *testing.T, b *bundle) {
				b.upsert("s", every5s, policy) // at 05:06:07.25
				b.clk.Advance(9 * time.Second) // the first pass, at 05:06:16.25, finds 05:06:10 and 05:06:15 passed
				b.pass(0)
				got := b.catchUps("s")
				if len(got) != 1 || !got[0].occurrence.Equal(time.Date(2031, 3, 4, 5, 6, 15, 0, time.UTC)) ||
					!got[0].job.RunAt.Equal(b.clk.Now()) {
					t.Fatalf("late occurrences gave catch-up jobs %v, want one for 05:06:15 due now", got)
				}
				b.mustCheckSince("s", every5s, b.clk.Now(), b.clk.Now().Add(time.Minute))
			})
		})
	}
}

// Occurrences planned before an outage do not run hours late when the nodes come back: each
// expires when the next occurrence is due, so the missed policy alone decides what runs.
func TestStalePlannedOccurrencesExpire(t *testing.T) {
	for policy, want := range map[store.MissedPolicy]int{store.MissedRunOnce: 1, store.MissedSkip: 0} {
		t.Run(string(policy), func(t *testing.T) {
			eachBackend(t, 1, func(t *testing.T, b *bundle) {
				b.upsert("s", every5s, policy)
				b.pass(0) // plans the next minute, then every node goes down
				b.clk.Advance(time.Hour + 2500*time.Millisecond)
				b.pass(0)
				due, err := b.stores[0].Claim(t.Context(), store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 100, Owner: "n", LeaseFor: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				if len(due) != want {
					t.Fatalf("%d jobs due after the outage, want %d (the catch-up only)", len(due), want)
				}
				expired := 0
				for _, p := range b.jobs("s") {
					if p.job.State == store.StateExpired {
						expired++
					}
				}
				if expired != 12 {
					t.Errorf("%d planned occurrences expired, want the 12 planned before the outage", expired)
				}
			})
		})
	}
}
