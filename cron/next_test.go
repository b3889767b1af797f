package cron

import (
	"testing"
	"time"
)

func TestNext(t *testing.T) {
	cases := []struct {
		name, expr, zone, after string
		want                    []string
	}{
		{"five fields", "30 9 * * *", "", "2025-06-01T09:30:00Z",
			[]string{"2025-06-02T09:30:00Z", "2025-06-03T09:30:00Z"}},
		{"strictly after, to the nanosecond", "30 9 * * *", "", "2025-06-01T09:29:59.999999999Z",
			[]string{"2025-06-01T09:30:00Z"}},
		{"seconds field", "15 * * * * *", "", "2025-06-01T12:00:00Z",
			[]string{"2025-06-01T12:00:15Z", "2025-06-01T12:01:15Z"}},
		{"seconds step", "*/20 * * * * *", "", "2025-06-01T12:00:00Z",
			[]string{"2025-06-01T12:00:20Z", "2025-06-01T12:00:40Z", "2025-06-01T12:01:00Z"}},
		{"@yearly", "@yearly", "", "2025-06-01T00:00:00Z", []string{"2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"}},
		{"@annually", "@annually", "", "2025-06-01T00:00:00Z", []string{"2026-01-01T00:00:00Z"}},
		{"@monthly", "@monthly", "", "2025-06-01T00:00:00Z", []string{"2025-07-01T00:00:00Z", "2025-08-01T00:00:00Z"}},
		{"@weekly on Sundays", "@weekly", "", "2025-06-01T00:00:00Z", []string{"2025-06-08T00:00:00Z", "2025-06-15T00:00:00Z"}},
		{"@daily", "@daily", "", "2025-06-01T00:00:00Z", []string{"2025-06-02T00:00:00Z"}},
		{"@midnight", "@midnight", "", "2025-06-01T00:00:00Z", []string{"2025-06-02T00:00:00Z"}},
		{"@hourly", "@hourly", "", "2025-06-01T00:00:00Z", []string{"2025-06-01T01:00:00Z"}},
		{"@daily in a zone", "@daily", "Europe/Berlin", "2025-06-01T00:00:00Z", []string{"2025-06-02T00:00:00+02:00"}},
		{"Mondays in January", "0 9 * jan mon", "", "2025-01-28T00:00:00Z",
			[]string{"2026-01-05T09:00:00Z", "2026-01-12T09:00:00Z"}},
		{"weekdays", "0 0 * * mon-fri", "", "2025-06-06T12:00:00Z", // a Friday
			[]string{"2025-06-09T00:00:00Z", "2025-06-10T00:00:00Z"}},
		{"13th or Friday", "0 0 13 * 5", "", "2025-06-01T00:00:00Z",
			[]string{"2025-06-06T00:00:00Z", "2025-06-13T00:00:00Z", "2025-06-20T00:00:00Z", "2025-06-27T00:00:00Z", "2025-07-04T00:00:00Z", "2025-07-11T00:00:00Z", "2025-07-13T00:00:00Z"}},
		{"13th, any weekday", "0 0 13 * ?", "", "2025-06-01T00:00:00Z",
			[]string{"2025-06-13T00:00:00Z", "2025-07-13T00:00:00Z"}},
		{"first Monday-ish: days 1-7 or Monday", "0 0 1-7 * mon", "", "2025-06-08T00:00:00Z",
			[]string{"2025-06-09T00:00:00Z", "2025-06-16T00:00:00Z"}},
		{"January and July", "0 0 1 jan,jul *", "", "2025-01-01T00:00:00Z",
			[]string{"2025-07-01T00:00:00Z", "2026-01-01T00:00:00Z"}},
		{"Feb 29", "0 0 29 2 *", "", "2025-01-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"Feb 29 across 2100", "0 0 29 2 *", "", "2096-03-01T00:00:00Z",
			[]string{"2104-02-29T00:00:00Z"}},
		{"31st skips short months", "0 0 31 * *", "", "2025-01-31T00:00:00Z",
			[]string{"2025-03-31T00:00:00Z", "2025-05-31T00:00:00Z", "2025-07-31T00:00:00Z", "2025-08-31T00:00:00Z", "2025-10-31T00:00:00Z", "2025-12-31T00:00:00Z"}},
		{"last minute of the year", "59 23 31 12 *", "", "2025-12-31T23:59:00Z", []string{"2026-12-31T23:59:00Z"}},
		{"@every on the epoch grid", "@every 90s", "", "1970-01-01T00:00:00Z",
			[]string{"1970-01-01T00:01:30Z", "1970-01-01T00:03:00Z"}},
		{"@every from anywhere", "@every 90s", "", "2025-06-01T00:00:00.5Z",
			[]string{"2025-06-01T00:01:30Z", "2025-06-01T00:03:00Z"}}, // 1748736000 is a multiple of 90
		{"@every strictly after", "@every 90s", "", "2025-06-01T00:01:30Z", []string{"2025-06-01T00:03:00Z"}},
		{"@every 7s off the minute", "@every 7s", "", "2025-06-01T00:00:00Z", // 1748736000 = 7·249819428 + 4
			[]string{"2025-06-01T00:00:03Z", "2025-06-01T00:00:10Z"}},
		{"@every before the epoch", "@every 1h", "", "1969-12-31T22:59:59Z",
			[]string{"1969-12-31T23:00:00Z", "1970-01-01T00:00:00Z"}},
		{"@every in a zone", "@every 1h30m", "Asia/Kolkata", "2025-06-01T00:00:00Z",
			[]string{"2025-06-01T07:00:00+05:30"}}, // 01:30Z
		{"year 9999 is the end", "@yearly", "", "9998-06-01T00:00:00Z", []string{"9999-01-01T00:00:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := mustParse(t, c.expr, c.zone)
			got := format(s.NextN(mustTime(t, c.after), len(c.want)))
			if !equal(got, c.want) {
				t.Errorf("%s after %s:\n got %v\nwant %v", s, c.after, got, c.want)
			}
		})
	}
}

func TestNextReturnsScheduleZone(t *testing.T) {
	for _, expr := range []string{"0 9 * * *", "@every 1m"} {
		s := mustParse(t, expr, "Asia/Tokyo")
		if got := s.Next(time.Now()).Location(); got != s.Location() {
			t.Errorf("%s: Next in %v, want %v", s, got, s.Location())
		}
	}
}

func TestNextNever(t *testing.T) {
	s := mustParse(t, "@yearly", "")
	for _, after := range []string{"9999-01-01T00:00:00Z", "9999-12-31T23:59:59Z"} {
		if got := s.Next(mustTime(t, after)); !got.IsZero() {
			t.Errorf("Next(%s) = %v, want zero", after, got)
		}
	}
	if got := s.NextN(mustTime(t, "9998-06-01T00:00:00Z"), 5); len(got) != 1 {
		t.Errorf("NextN at the end = %v, want one occurrence", got)
	}
	for _, n := range []int{0, -1} {
		if got := s.NextN(time.Now(), n); len(got) != 0 {
			t.Errorf("NextN(n=%d) = %v, want none", n, got)
		}
	}
}

// TestDailyOncePerDay runs daily jobs for three years in each zone, DST days included: one
// occurrence per local calendar day, at the named time or, on a day that skips it, just after.
func TestDailyOncePerDay(t *testing.T) {
	exprs := []string{"0 0 * * *", "@daily", "30 1 * * *", "0 2 * * *", "15 2 * * *", "30 2 * * *",
		"59 2 * * *", "0 3 * * *", "59 23 * * *", "30 30 2 * * *"}
	for _, zone := range testZones {
		loc := mustZone(t, zone)
		from := time.Date(2024, 1, 1, 0, 0, 0, 0, loc)
		to := time.Date(2027, 1, 1, 0, 0, 0, 0, loc)
		for _, expr := range exprs {
			s := mustParse(t, expr, zone)
			day := from
			for _, occ := range until(s, from, to) {
				y, m, d := occ.Date()
				if wy, wm, wd := day.Date(); y != wy || m != wm || d != wd {
					t.Fatalf("%s: occurrence %s, want one on %s", s, occ, day.Format(time.DateOnly))
				}
				day = day.AddDate(0, 0, 1)
			}
			if !day.Equal(to) {
				t.Errorf("%s: occurrences end before %s", s, day.Format(time.DateOnly))
			}
		}
	}
}

// TestHourlyFollowsTheClock counts a year of hourly occurrences per zone: one per hour that
// passes, so 24 on most days, one fewer on spring-forward day and one more on fall-back day,
// except where a 30-minute shift skips or repeats only half of an hour.
func TestHourlyFollowsTheClock(t *testing.T) {
	for _, zone := range testZones {
		loc := mustZone(t, zone)
		from := time.Date(2025, 1, 1, 0, 0, 0, 0, loc)
		to := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
		for _, expr := range []string{"0 * * * *", "30 * * * *"} {
			s := mustParse(t, expr, zone)
			got := len(until(s, from, to))
			want := int(to.Sub(from) / time.Hour) // the hours that pass
			if zone == "Australia/Lord_Howe" && expr == "0 * * * *" {
				want-- // 02:00 is skipped in October, but no :00 repeats in April (01:30-02:00 does)
			}
			if zone == "Australia/Lord_Howe" && expr == "30 * * * *" {
				want++ // 01:30 repeats in April, but 02:30 still exists in October
			}
			if got != want {
				t.Errorf("%s: %d occurrences in 2025, want %d", s, got, want)
			}
		}
	}
}

func TestNextNIncreasing(t *testing.T) {
	for _, zone := range testZones {
		for _, expr := range []string{"*/15 * * * *", "0 */3 * * *", "30 2 * * *", "@every 7m", "0 0 29 2 *", "* * * * * *"} {
			s := mustParse(t, expr, zone)
			after := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			occ := s.NextN(after, 500)
			if len(occ) != 500 {
				t.Fatalf("%s: %d occurrences, want 500", s, len(occ))
			}
			for i, o := range occ {
				if !o.After(after) {
					t.Fatalf("%s: occurrence %d %s is not after %s", s, i, o, after)
				}
				after = o
			}
		}
	}
}

func BenchmarkNext(b *testing.B) {
	for _, expr := range []string{"30 2 * * *", "*/15 * * * *", "0 0 29 2 *", "@every 90s"} {
		b.Run(expr, func(b *testing.B) {
			s := mustParse(b, expr, "America/New_York")
			t := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			for b.Loop() {
				if t = s.Next(t); t.Year() > 9000 {
					t = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
				}
			}
		})
	}
}
