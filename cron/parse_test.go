package cron

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	cases := []struct {
		expr, zone           string
		wantExpr, wantString string
		hourly               bool
	}{
		{"  0   9 * *  mon-fri ", "", "0 9 * * mon-fri", "0 9 * * mon-fri (UTC)", false},
		{"*/15 * * * *", "Europe/Berlin", "*/15 * * * *", "*/15 * * * * (Europe/Berlin)", true},
		{"0 0-23 * * *", "", "0 0-23 * * *", "0 0-23 * * * (UTC)", true},
		{"0 */1 * * *", "", "0 */1 * * *", "0 */1 * * * (UTC)", true},
		{"0 1-23 * * *", "", "0 1-23 * * *", "0 1-23 * * * (UTC)", false},
		{"0 */2 * * *", "", "0 */2 * * *", "0 */2 * * * (UTC)", false},
		{"30 0 9 * * *", "", "30 0 9 * * *", "30 0 9 * * * (UTC)", false},
		{"@hourly", "", "@hourly", "@hourly (UTC)", true},
		{"@daily", "America/New_York", "@daily", "@daily (America/New_York)", false},
		{" @weekly ", "UTC", "@weekly", "@weekly (UTC)", false},
		{"@every  90s", "", "@every 90s", "@every 90s (UTC)", false},
		{"0 0 29 2 1", "", "0 0 29 2 1", "0 0 29 2 1 (UTC)", false}, // Feb 29th or Mondays in February
		{"0 0 1 JAN,Jul ?", "", "0 0 1 JAN,Jul ?", "0 0 1 JAN,Jul ? (UTC)", false},
	}
	for _, c := range cases {
		s, err := Parse(c.expr, c.zone)
		if err != nil {
			t.Errorf("Parse(%q, %q): %v", c.expr, c.zone, err)
			continue
		}
		if s.Expr() != c.wantExpr || s.String() != c.wantString || s.hourly != c.hourly {
			t.Errorf("Parse(%q, %q) = %q, %q, hourly %v; want %q, %q, hourly %v",
				c.expr, c.zone, s.Expr(), s, s.hourly, c.wantExpr, c.wantString, c.hourly)
		}
		if again, err := Parse(s.Expr(), s.Zone()); err != nil || again.String() != s.String() {
			t.Errorf("reparse of %s: %v, %v", s, again, err)
		}
	}
}

func TestInterval(t *testing.T) {
	if d, ok := mustParse(t, "@every 1h30m", "").Interval(); !ok || d != 90*time.Minute {
		t.Errorf("Interval of @every 1h30m = %v, %v", d, ok)
	}
	if d, ok := mustParse(t, "@hourly", "").Interval(); ok {
		t.Errorf("Interval of @hourly = %v, %v; want false", d, ok)
	}
}

func TestParseRejects(t *testing.T) {
	cases := []struct{ expr, zone, want string }{
		{"", "", "empty expression"},
		{" \t ", "", "empty expression"},
		{"60 * * * *", "", `minute field "60": end of range (60) above maximum (59)`},
		{"60 0 * * * *", "", `second field "60"`},
		{"0 24 * * *", "", "above maximum (23)"},
		{"0 0 0 * *", "", "below minimum (1)"},
		{"0 0 * 13 *", "", "above maximum (12)"},
		{"0 0 * foo *", "", `month field "foo": "foo" is not a number or a name (JAN, MON)`},
		{"0 0 L-2 * *", "", `day-of-month field "L-2": "L" is not a number or a name`},
		{"0 0 * * 8", "", `day-of-week field "8": end of range (8) above maximum (7, which is Sunday as 0 is)`},
		{"5-1 * * * *", "", "beyond end of range"},
		{"*/0 * * * *", "", "step of range should be a positive number"},
		{"1-2-3 * * * *", "", "not a value, range or step"},
		{"*/2/3 * * * *", "", "not a value, range or step"},
		{"*-5 * * * *", "", `minute field "*-5"`},
		{"1,,2 * * * *", "", "not a value, range or step"},
		{", * * * *", "", "not a value, range or step"},
		{"+5 * * * *", "", "not a value, range or step"},
		{"-5 * * * *", "", "not a value, range or step"},
		{"* * * *", "", "found 4"},
		{"* * * * * * *", "", "expected 5 fields, or 6 with seconds first, found 7"},
		{"0 0 30 2 *", "", "never fires"},
		{"0 0 31 4,6,9,11 *", "", "never fires"},
		{"0 0 30 feb ?", "", "never fires"},
		{"0 9 * * *", "Mars/Olympus_Mons", `unknown time zone "Mars/Olympus_Mons"`},
		{"0 9 * * *", "../etc/passwd", "unknown time zone"},
		{"0 9 * * *", "Local", `zone "Local"`},
		{"CRON_TZ=Europe/Berlin 0 9 * * *", "", "give the zone in the zone field"},
		{"TZ=UTC 0 9 * * *", "", "give the zone in the zone field"},
		{"TZ=", "", "give the zone in the zone field"}, // robfig panics on this one
		{"cron_tz=UTC 0 9 * * *", "", "give the zone in the zone field"},
		{"@fortnightly", "", "unrecognized descriptor"},
		{"@daily 0", "", "unrecognized descriptor"},
		{"@every", "", "@every takes one duration"},
		{"@every 5s 6s", "", "@every takes one duration"},
		{"@every banana", "", "invalid duration"},
		{"@every -5s", "", "must be positive"},
		{"@every 0s", "", "must be positive"},
		{"@every 500ms", "", "at least one second"},
		{"@every 1.5s", "", "whole number of seconds"},
	}
	for _, c := range cases {
		s, err := Parse(c.expr, c.zone)
		if err == nil {
			t.Errorf("Parse(%q, %q) = %s, want an error", c.expr, c.zone, s)
			continue
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q, %q): %v; want ErrInvalid mentioning %q", c.expr, c.zone, err, c.want)
		}
	}
}
