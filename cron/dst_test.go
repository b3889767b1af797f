package cron

import (
	"testing"
	"time"
)

// Transitions in 2025 the cases below cross (local times):
//
//	America/New_York     Mar 9 02:00 EST → 03:00 EDT    Nov 2 02:00 EDT → 01:00 EST
//	Europe/Berlin        Mar 30 02:00 CET → 03:00 CEST  Oct 26 03:00 CEST → 02:00 CET
//	Australia/Sydney     Oct 5 02:00 AEST → 03:00 AEDT  Apr 6 03:00 AEDT → 02:00 AEST
//	Australia/Lord_Howe  Oct 5 02:00 +10:30 → 02:30 +11 Apr 6 02:00 +11 → 01:30 +10:30
var dstCases = []struct {
	name, zone, expr, after string
	want                    []string
}{
	// New York.
	{"gap daily runs after the gap", "America/New_York", "30 2 * * *", "2025-03-08T12:00:00-05:00",
		[]string{"2025-03-09T03:00:00-04:00", "2025-03-10T02:30:00-04:00"}},
	{"gap start daily", "America/New_York", "0 2 * * *", "2025-03-08T12:00:00-05:00",
		[]string{"2025-03-09T03:00:00-04:00", "2025-03-10T02:00:00-04:00"}},
	{"gap end daily is not doubled", "America/New_York", "0 3 * * *", "2025-03-08T12:00:00-05:00",
		[]string{"2025-03-09T03:00:00-04:00", "2025-03-10T03:00:00-04:00"}},
	{"gap folds into a time after it", "America/New_York", "0 0 2,3 * * *", "2025-03-08T12:00:00-05:00",
		[]string{"2025-03-09T03:00:00-04:00", "2025-03-10T02:00:00-04:00", "2025-03-10T03:00:00-04:00"}},
	{"gap times run once together", "America/New_York", "0,30 2 * * *", "2025-03-08T12:00:00-05:00",
		[]string{"2025-03-09T03:00:00-04:00", "2025-03-10T02:00:00-04:00", "2025-03-10T02:30:00-04:00"}},
	{"gap weekly", "America/New_York", "30 2 * * sun", "2025-03-03T12:00:00-05:00",
		[]string{"2025-03-09T03:00:00-04:00", "2025-03-16T02:30:00-04:00"}},
	{"gap with seconds", "America/New_York", "30 30 2 * * *", "2025-03-08T12:00:00-05:00",
		[]string{"2025-03-09T03:00:00-04:00", "2025-03-10T02:30:30-04:00"}},
	{"gap seen from its last second", "America/New_York", "30 2 * * *", "2025-03-09T01:59:59-05:00",
		[]string{"2025-03-09T03:00:00-04:00", "2025-03-10T02:30:00-04:00"}},
	{"repeat daily runs the first time", "America/New_York", "30 1 * * *", "2025-11-01T12:00:00-04:00",
		[]string{"2025-11-02T01:30:00-04:00", "2025-11-03T01:30:00-05:00"}},
	{"repeat seen from inside the second pass", "America/New_York", "30 1 * * *", "2025-11-02T01:00:00-05:00",
		[]string{"2025-11-03T01:30:00-05:00"}},
	{"repeat every minute of a fixed hour", "America/New_York", "* 1 * * *", "2025-11-02T01:58:00-04:00",
		[]string{"2025-11-02T01:59:00-04:00", "2025-11-03T01:00:00-05:00"}},
	{"hourly through the repeat", "America/New_York", "0 * * * *", "2025-11-02T00:30:00-04:00",
		[]string{"2025-11-02T01:00:00-04:00", "2025-11-02T01:00:00-05:00", "2025-11-02T02:00:00-05:00"}},
	{"hourly through the gap", "America/New_York", "0 * * * *", "2025-03-09T00:30:00-05:00",
		[]string{"2025-03-09T01:00:00-05:00", "2025-03-09T03:00:00-04:00", "2025-03-09T04:00:00-04:00"}},
	{"@hourly through the repeat", "America/New_York", "@hourly", "2025-11-02T00:30:00-04:00",
		[]string{"2025-11-02T01:00:00-04:00", "2025-11-02T01:00:00-05:00", "2025-11-02T02:00:00-05:00"}},
	{"15 minutes through the gap", "America/New_York", "*/15 * * * *", "2025-03-09T01:30:00-05:00",
		[]string{"2025-03-09T01:45:00-05:00", "2025-03-09T03:00:00-04:00", "2025-03-09T03:15:00-04:00"}},
	{"15 minutes through the repeat", "America/New_York", "*/15 * * * *", "2025-11-02T01:40:00-04:00",
		[]string{"2025-11-02T01:45:00-04:00", "2025-11-02T01:00:00-05:00", "2025-11-02T01:15:00-05:00"}},
	{"20 seconds through the gap", "America/New_York", "*/20 * * * * *", "2025-03-09T01:59:30-05:00",
		[]string{"2025-03-09T01:59:40-05:00", "2025-03-09T03:00:00-04:00", "2025-03-09T03:00:20-04:00"}},
	{"@every through the repeat", "America/New_York", "@every 10m", "2025-11-02T01:55:00-04:00",
		[]string{"2025-11-02T01:00:00-05:00", "2025-11-02T01:10:00-05:00", "2025-11-02T01:20:00-05:00"}},
	{"@every through the gap", "America/New_York", "@every 10m", "2025-03-09T01:55:00-05:00",
		[]string{"2025-03-09T03:00:00-04:00", "2025-03-09T03:10:00-04:00"}},

	// After 2037 offsets come from each zone's TZ rule, where go.dev/issue/81583 lives.
	{"gap in a TZ-rule year", "America/New_York", "30 2 * * *", "2040-03-10T12:00:00-05:00",
		[]string{"2040-03-11T03:00:00-04:00", "2040-03-12T02:30:00-04:00"}},
	{"repeat in a TZ-rule year", "America/New_York", "0 * * * *", "2040-11-04T00:30:00-04:00",
		[]string{"2040-11-04T01:00:00-04:00", "2040-11-04T01:00:00-05:00", "2040-11-04T02:00:00-05:00"}},
	{"end of a leap TZ-rule year", "America/New_York", "0 */6 * * *", "2040-12-30T17:00:00-05:00",
		[]string{"2040-12-30T18:00:00-05:00", "2040-12-31T00:00:00-05:00", "2040-12-31T06:00:00-05:00",
			"2040-12-31T12:00:00-05:00", "2040-12-31T18:00:00-05:00", "2041-01-01T00:00:00-05:00"}},
	{"end of a leap TZ-rule year, south", "Australia/Sydney", "0 12 * * *", "2040-12-30T00:00:00+11:00",
		[]string{"2040-12-30T12:00:00+11:00", "2040-12-31T12:00:00+11:00", "2041-01-01T12:00:00+11:00"}},

	// Berlin: the gap and the repeat are both 02:00-03:00.
	{"Berlin gap daily", "Europe/Berlin", "30 2 * * *", "2025-03-29T12:00:00+01:00",
		[]string{"2025-03-30T03:00:00+02:00", "2025-03-31T02:30:00+02:00"}},
	{"Berlin repeat daily", "Europe/Berlin", "30 2 * * *", "2025-10-25T12:00:00+02:00",
		[]string{"2025-10-26T02:30:00+02:00", "2025-10-27T02:30:00+01:00"}},
	{"Berlin hourly through the repeat", "Europe/Berlin", "0 * * * *", "2025-10-26T01:30:00+02:00",
		[]string{"2025-10-26T02:00:00+02:00", "2025-10-26T02:00:00+01:00", "2025-10-26T03:00:00+01:00"}},
	{"Berlin hourly through the gap", "Europe/Berlin", "0 * * * *", "2025-03-30T01:30:00+01:00",
		[]string{"2025-03-30T03:00:00+02:00", "2025-03-30T04:00:00+02:00"}},
	{"Berlin every two hours is fixed-time", "Europe/Berlin", "0 */2 * * *", "2025-10-26T01:00:00+02:00",
		[]string{"2025-10-26T02:00:00+02:00", "2025-10-26T04:00:00+01:00"}},
	{"Berlin every two hours in the gap", "Europe/Berlin", "0 */2 * * *", "2025-03-30T01:00:00+01:00",
		[]string{"2025-03-30T03:00:00+02:00", "2025-03-30T04:00:00+02:00"}},

	// Sydney: southern hemisphere, the repeat in April and the gap in October.
	{"Sydney gap daily", "Australia/Sydney", "30 2 * * *", "2025-10-04T12:00:00+10:00",
		[]string{"2025-10-05T03:00:00+11:00", "2025-10-06T02:30:00+11:00"}},
	{"Sydney repeat daily", "Australia/Sydney", "30 2 * * *", "2025-04-05T12:00:00+11:00",
		[]string{"2025-04-06T02:30:00+11:00", "2025-04-07T02:30:00+10:00"}},
	{"Sydney hourly through the repeat", "Australia/Sydney", "0 * * * *", "2025-04-06T01:30:00+11:00",
		[]string{"2025-04-06T02:00:00+11:00", "2025-04-06T02:00:00+10:00", "2025-04-06T03:00:00+10:00"}},

	// Lord Howe: the clock moves by 30 minutes.
	{"Lord Howe gap daily", "Australia/Lord_Howe", "15 2 * * *", "2025-10-04T12:00:00+10:30",
		[]string{"2025-10-05T02:30:00+11:00", "2025-10-06T02:15:00+11:00"}},
	{"Lord Howe gap folds into its end", "Australia/Lord_Howe", "0,15,30 2 * * *", "2025-10-04T12:00:00+10:30",
		[]string{"2025-10-05T02:30:00+11:00", "2025-10-06T02:00:00+11:00"}},
	{"Lord Howe repeat daily", "Australia/Lord_Howe", "45 1 * * *", "2025-04-05T12:00:00+11:00",
		[]string{"2025-04-06T01:45:00+11:00", "2025-04-07T01:45:00+10:30"}},
	{"Lord Howe repeat misses the hour", "Australia/Lord_Howe", "0 1 * * *", "2025-04-05T12:00:00+11:00",
		[]string{"2025-04-06T01:00:00+11:00", "2025-04-07T01:00:00+10:30"}},
	{"Lord Howe half past through the repeat", "Australia/Lord_Howe", "30 * * * *", "2025-04-06T00:45:00+11:00",
		[]string{"2025-04-06T01:30:00+11:00", "2025-04-06T01:30:00+10:30", "2025-04-06T02:30:00+10:30"}},
	{"Lord Howe hourly through the repeat", "Australia/Lord_Howe", "0 * * * *", "2025-04-06T00:30:00+11:00",
		[]string{"2025-04-06T01:00:00+11:00", "2025-04-06T02:00:00+10:30"}},
	{"Lord Howe hourly through the gap", "Australia/Lord_Howe", "0 * * * *", "2025-10-05T00:30:00+10:30",
		[]string{"2025-10-05T01:00:00+10:30", "2025-10-05T03:00:00+11:00"}},
	{"Lord Howe 15 minutes through the gap", "Australia/Lord_Howe", "*/15 * * * *", "2025-10-05T01:40:00+10:30",
		[]string{"2025-10-05T01:45:00+10:30", "2025-10-05T02:30:00+11:00", "2025-10-05T02:45:00+11:00"}},
}

func TestDST(t *testing.T) {
	for _, c := range dstCases {
		t.Run(c.name, func(t *testing.T) {
			s := mustParse(t, c.expr, c.zone)
			got := format(s.NextN(mustTime(t, c.after), len(c.want)))
			if !equal(got, c.want) {
				t.Errorf("%s after %s:\n got %v\nwant %v", s, c.after, got, c.want)
			}
		})
	}
}

// TestDSTAgainstOracle compares Next around every 2025 transition in each zone with a brute-force
// reading of the rule, minute by minute.
func TestDSTAgainstOracle(t *testing.T) {
	exprs := []string{
		"30 2 * * *", "30 1 * * *", "0 2 * * *", "15 2 * * *", "45 1 * * *", "0,30 2 * * *",
		"* 2 * * *", "*/10 1-3 * * *", "0 */2 * * *", "0 * * * *", "30 * * * *", "*/15 * * * *",
		"5 * * * 0",
	}
	for _, zone := range testZones {
		loc := mustZone(t, zone)
		x := time.Date(2025, 1, 1, 0, 0, 0, 0, loc)
		for range 2 {
			_, end := x.ZoneBounds()
			from, to := end.Add(-48*time.Hour), end.Add(48*time.Hour)
			for _, expr := range exprs {
				s := mustParse(t, expr, zone)
				want := format(oracle(s, from, to))
				got := format(until(s, from, to))
				if !equal(got, want) {
					t.Errorf("%s around %s:\n got %v\nwant %v", s, end.In(loc), got, want)
				}
			}
			x = end
		}
	}
}

// oracle steps through every minute in [from, to) and applies the package doc's rule directly:
// a fixed-time schedule fires when the clock shows a time it names for the first time, or jumps
// over one; an hourly one whenever the clock shows a time it names. It knows minutes only.
func oracle(s *Schedule, from, to time.Time) []time.Time {
	var out []time.Time
	wall := func(t time.Time) time.Time { _, off := t.Zone(); return wallClock(t, off) }
	matches := func(w time.Time) bool {
		return s.month&(1<<w.Month()) != 0 && s.dayMatches(w) &&
			s.hour&(1<<w.Hour()) != 0 && s.minute&(1<<w.Minute()) != 0
	}
	latest := wall(from.Add(-time.Minute).In(s.loc)) // the latest wall-clock time shown so far
	for t := from; t.Before(to); t = t.Add(time.Minute) {
		w := wall(t.In(s.loc))
		fire := matches(w) && (s.hourly || w.After(latest))
		if !s.hourly {
			for g := latest.Add(time.Minute); g.Before(w); g = g.Add(time.Minute) {
				fire = fire || matches(g) // jumped over
			}
		}
		if fire {
			out = append(out, t.In(s.loc))
		}
		if w.After(latest) {
			latest = w
		}
	}
	return out
}
