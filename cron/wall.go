package cron

import (
	"math/bits"
	"time"
)

// nextWall returns the first wall-clock time in [t, end) that the fields match, or the zero time
// if there is none. Wall-clock times are carried as UTC times with the local clock reading, so
// this is plain calendar arithmetic: zones and their transitions are dst.go's. t must be a whole
// second.
func (s *Schedule) nextWall(t, end time.Time) time.Time {
	for t.Before(end) {
		y, mo, d := t.Date()
		h, mi, sec := t.Clock()
		if s.month&(1<<mo) == 0 {
			t = time.Date(y, mo+1, 1, 0, 0, 0, 0, time.UTC)
			continue
		}
		if !s.dayMatches(t) {
			t = time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC)
			continue
		}
		// The day matches: jump straight to the next matching hour, minute and second.
		switch hh := atOrAbove(s.hour, h); {
		case hh < 0:
			t = time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC)
			continue
		case hh > h:
			return before(time.Date(y, mo, d, hh, lowest(s.minute), lowest(s.second), 0, time.UTC), end)
		}
		switch mm := atOrAbove(s.minute, mi); {
		case mm < 0:
			t = time.Date(y, mo, d, h+1, 0, 0, 0, time.UTC)
			continue
		case mm > mi:
			return before(time.Date(y, mo, d, h, mm, lowest(s.second), 0, time.UTC), end)
		}
		if ss := atOrAbove(s.second, sec); ss >= 0 {
			return before(time.Date(y, mo, d, h, mi, ss, 0, time.UTC), end)
		}
		t = time.Date(y, mo, d, h, mi+1, 0, 0, time.UTC)
	}
	return time.Time{}
}

// before returns t if it is before end, else the zero time.
func before(t, end time.Time) time.Time {
	if t.Before(end) {
		return t
	}
	return time.Time{}
}

// dayMatches reports whether the date of wall time t matches the day fields, by Vixie cron's
// rule: when both are restricted, either may match.
func (s *Schedule) dayMatches(t time.Time) bool {
	y, mo, day := t.Date()
	wd := t.Weekday()
	domOK, dowOK := s.dom&(1<<day) != 0, s.dow&(1<<wd) != 0
	if s.special.any() {
		n := monthDays(y, mo)
		domOK = domOK || s.matchesDom(day, n)
		dowOK = dowOK || s.matchesDow(day, n, wd)
	}
	if s.dayOr {
		return domOK || dowOK
	}
	return domOK && dowOK
}

// atOrAbove returns the smallest value in the set mask that is at least v, or -1 if none is.
func atOrAbove(mask uint64, v int) int {
	if m := mask >> v << v; m != 0 {
		return bits.TrailingZeros64(m)
	}
	return -1
}

// lowest returns the smallest value in the non-empty set mask.
func lowest(mask uint64) int { return bits.TrailingZeros64(mask) }
