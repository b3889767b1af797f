package cron

import (
	"strings"
	"testing"
	"time"
)

// The day forms crontab users type: 7 for Sunday, L, nL and n#k; each occurrence is checked.
func TestCrontabDayForms(t *testing.T) {
	utc := func(s string) time.Time {
		v, err := time.Parse(time.DateTime, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		expr, from string
		want       []string
	}{
		// 2026-11-01 is a Sunday.
		{"0 0 * * 7", "2026-11-01 00:00:00", []string{"2026-11-01 00:00:00", "2026-11-08 00:00:00"}},
		{"0 0 * * 5-7", "2026-11-01 00:00:00", []string{"2026-11-01 00:00:00", "2026-11-06 00:00:00", "2026-11-07 00:00:00"}},
		{"0 0 * * 1-7/3", "2026-11-01 00:00:00", []string{"2026-11-01 00:00:00", "2026-11-02 00:00:00", "2026-11-05 00:00:00"}}, // Mon, Thu, Sun
		{"0 12 L * *", "2026-01-15 00:00:00", []string{"2026-01-31 12:00:00", "2026-02-28 12:00:00", "2026-03-31 12:00:00", "2026-04-30 12:00:00"}},
		{"0 12 L 2 *", "2027-03-01 00:00:00", []string{"2028-02-29 12:00:00", "2029-02-28 12:00:00"}},
		{"0 9 * * 5L", "2026-11-01 00:00:00", []string{"2026-11-27 09:00:00", "2026-12-25 09:00:00", "2027-01-29 09:00:00"}},
		{"0 9 * * 1#2", "2026-11-01 00:00:00", []string{"2026-11-09 09:00:00", "2026-12-14 09:00:00"}},
		{"0 9 * * 1#2,5L", "2026-11-01 00:00:00", []string{"2026-11-09 09:00:00", "2026-11-27 09:00:00", "2026-12-14 09:00:00"}},
		// Both day fields restricted: either matches, as with plain values.
		{"0 9 15,L * 0#1", "2026-11-01 00:00:00", []string{"2026-11-01 09:00:00", "2026-11-15 09:00:00", "2026-11-30 09:00:00", "2026-12-06 09:00:00"}},
	}
	for _, c := range cases {
		s := mustParse(t, c.expr, "")
		got := s.NextN(utc(c.from).Add(-time.Second), len(c.want))
		var gotS []string
		for _, g := range got {
			gotS = append(gotS, g.UTC().Format(time.DateTime))
		}
		if strings.Join(gotS, ", ") != strings.Join(c.want, ", ") {
			t.Errorf("%s from %s: %v, want %v", c.expr, c.from, gotS, c.want)
		}
	}
}

// The DST rule applies to the new forms: the second Sunday of March 2026 is New York's
// spring-forward day, and 02:30 does not exist then; the fixed-time job runs at 03:00 EDT.
func TestCrontabDayFormsFollowTheDSTRule(t *testing.T) {
	s := mustParse(t, "30 2 * * 0#2", "America/New_York")
	ny, _ := time.LoadLocation("America/New_York")
	got := s.Next(time.Date(2026, 3, 1, 0, 0, 0, 0, ny))
	if want := time.Date(2026, 3, 8, 3, 0, 0, 0, ny); !got.Equal(want) {
		t.Fatalf("next %v, want %v", got, want)
	}
}

func TestCrontabDayFormsRejected(t *testing.T) {
	for expr, want := range map[string]string{
		"0 0 * * L":     "L alone is ambiguous",
		"0 0 LW * *":    "LW (weekday nearest a day) is not supported",
		"0 0 * * 1#6":   "day-of-week field",
		"0 0 * * 8L":    "day-of-week field",
		"0 0 31 2 *":    "never fires",
		"0 0 * * 5-7/0": "day-of-week field",
	} {
		if _, err := Parse(expr, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error saying %q", expr, err, want)
		}
	}
}
