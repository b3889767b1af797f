package cron

import (
	"testing"
	"time"
)

// FuzzParse checks that no expression panics Parse, and that every schedule that parses gives
// occurrences strictly after their input, strictly increasing, in bounded time.
func FuzzParse(f *testing.F) {
	for _, expr := range []string{
		"0 9 * * *", "30 2 * * *", "*/15 * * * *", "0 0 29 2 *", "0 0 30 2 *", "15 10 * * * *",
		"0 0 13 * 5", "@daily", "@every 90s", "@every -5s", "TZ=", "CRON_TZ=UTC 0 0 * * *",
		"*-5 * * * *", "1,,2 * * * *", "0 0 31 * *", "* * * * * * *", "", "1-5/2 */3 1,15 jan-jun mon-fri",
		"0 0 1-7 * mon", "59 59 23 31 12 *", "*/7 1-3 * * ?", "0,30 2 * * sun", "@weekly", "@every 1h30m",
	} {
		f.Add(expr, uint8(0), int64(1748736000))
	}
	f.Add("30 1 * * *", uint8(1), int64(1762059600)) // New York, fall-back day 2025
	f.Add("0 * * * *", uint8(4), int64(1743897600))  // Lord Howe, April 2025
	zones := append([]string{"UTC"}, testZones...)
	const (
		lo = -2208988800 // 1900
		hi = 7258118400  // 2200
	)
	f.Fuzz(func(t *testing.T, expr string, zone uint8, unix int64) {
		s, err := Parse(expr, zones[int(zone)%len(zones)])
		if err != nil {
			return
		}
		if unix < lo || unix >= hi {
			unix = lo + (unix%(hi-lo)+(hi-lo))%(hi-lo)
		}
		after := time.Unix(unix, 0)
		start := time.Now()
		occ := s.NextN(after, 20)
		if len(occ) != 20 {
			t.Fatalf("%s: %d occurrences after %s, want 20", s, len(occ), after)
		}
		for i, o := range occ {
			if !o.After(after) {
				t.Fatalf("%s: occurrence %d %s is not after %s", s, i, o, after)
			}
			if next := s.Next(after); !next.Equal(o) {
				t.Fatalf("%s: Next(%s) = %s, NextN gave %s", s, after, next, o)
			}
			after = o
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%s: 20 occurrences took %v", s, d)
		}
		if s.every == 0 {
			checkOccurrences(t, s, occ)
		}
		// Where the oracle applies (whole minutes, a short window), the occurrences must be its.
		if from, to := time.Unix(unix, 0).Add(time.Second), occ[len(occ)-1].Add(time.Second); s.second == 1 && to.Sub(from) < 72*time.Hour {
			from = from.Truncate(time.Minute).Add(time.Minute)
			if got, want := format(until(s, from, to)), format(oracle(s, from, to)); !equal(got, want) {
				t.Fatalf("%s in [%s, %s):\n got %v\nwant %v", s, from, to, got, want)
			}
		}
	})
}

// checkOccurrences checks each occurrence of a field schedule against the rule: the local clock shows a
// time the fields name, or the occurrence is the first instant after a gap; and a fixed-time
// schedule never shows the same local time twice.
func checkOccurrences(t *testing.T, s *Schedule, occ []time.Time) {
	seen := map[time.Time]bool{}
	for _, o := range occ {
		_, off := o.Zone()
		w := wallClock(o, off)
		named := s.month&(1<<w.Month()) != 0 && s.dayMatches(w) &&
			s.hour&(1<<w.Hour()) != 0 && s.minute&(1<<w.Minute()) != 0 && s.second&(1<<w.Second()) != 0
		_, prev := o.Add(-time.Second).Zone()
		if !named && (s.hourly || prev >= off) {
			t.Fatalf("%s: occurrence %s is neither a named time nor just after a gap", s, o)
		}
		if !s.hourly && seen[w] {
			t.Fatalf("%s: fixed-time occurrence %s repeats a local time", s, o)
		}
		seen[w] = true
	}
}
