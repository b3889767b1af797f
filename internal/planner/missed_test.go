package planner

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rotahq/rota/cron"
)

// lastMissed finds what walking every occurrence from base finds, across sparse and dense
// schedules and DST changes, however long the gap.
func TestLastMissedMatchesWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, expr := range []string{"* * * * * *", "*/7 * * * * *", "@every 90s", "30 2 * * *", "0 * * * *", "0 0 29 2 *"} {
		sched, err := cron.Parse(expr, "America/New_York")
		if err != nil {
			t.Fatal(err)
		}
		for range 40 {
			base := time.Date(2031, 3, 9, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(48 * time.Hour))))
			// Gaps from a second to about three days, as many short as long.
			now := base.Add(time.Duration(rng.Float64() * float64(time.Second<<rng.IntN(18))))
			var want time.Time
			for at := sched.Next(base); !at.IsZero() && !at.After(now); at = sched.Next(at) {
				want = at
			}
			if want.IsZero() {
				continue // lastMissed is only asked when an occurrence passed
			}
			if got := lastMissed(sched, base, now); !got.Equal(want) {
				t.Errorf("%s: lastMissed(%v, %v) = %v, want %v", expr, base, now, got, want)
			}
		}
	}
}

// A schedule firing every second, paused for ten years: walking every missed occurrence would
// take minutes of the leader's pass.
func TestLastMissedLongGap(t *testing.T) {
	sched, err := cron.Parse("* * * * * *", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	now := start.AddDate(10, 0, 0)
	for _, now := range []time.Time{now, now.Truncate(time.Second)} { // between and right at occurrences
		if got := lastMissed(sched, start, now); !got.Equal(now.Truncate(time.Second)) {
			t.Fatalf("lastMissed(…, %v) = %v, want %v", now, got, now.Truncate(time.Second))
		}
	}
	leap, err := cron.Parse("0 0 29 2 *", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := lastMissed(leap, start, now), time.Date(2040, 2, 29, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("lastMissed of Feb 29 = %v, want %v", got, want)
	}
}
