package cron

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The day forms crontab users write that robfig does not read, handled here before it sees the
// fields: 7 for Sunday in day-of-week (also as a range's end, "5-7"), L in day-of-month (the
// last day of the month), nL in day-of-week (the last weekday n of the month: "5L", the last
// Friday) and n#k (the k-th weekday n of the month: "1#2", the second Monday).
type special struct {
	domLast bool
	dowLast uint64    // bit w: the last weekday w of the month
	dowNth  [7]uint64 // [w] bit k: the k-th weekday w of the month, k in 1..5
}

var (
	lastWeekday = regexp.MustCompile(`^([0-7])L$`)
	nthWeekday  = regexp.MustCompile(`^([0-7])#([1-5])$`)
	sundayRange = regexp.MustCompile(`^([0-7])-7(/([0-9]+))?$`)
)

// takeSpecials removes the special items from the day fields of a five- or six-field expression
// and returns the fields robfig is to read, with what was taken. A day field left with no item is
// given a placeholder, and blank says which: its mask is then cleared after robfig parsed it.
func takeSpecials(words []string) (out []string, sp special, blankDom, blankDow bool, err error) {
	out = append([]string(nil), words...)
	dom, dow := len(out)-3, len(out)-1
	var keep []string
	for part := range strings.SplitSeq(out[dom], ",") {
		switch part {
		case "L":
			sp.domLast = true
		case "LW", "W":
			return nil, sp, false, false, fmt.Errorf("day-of-month field %q: %s (weekday nearest a day) is not supported", out[dom], part)
		default:
			keep = append(keep, part)
		}
	}
	if len(keep) == 0 {
		keep, blankDom = []string{"1"}, true
	}
	out[dom] = strings.Join(keep, ",")

	keep = nil
	for part := range strings.SplitSeq(out[dow], ",") {
		if m := lastWeekday.FindStringSubmatch(part); m != nil {
			sp.dowLast |= 1 << weekday(m[1])
			continue
		}
		if m := nthWeekday.FindStringSubmatch(part); m != nil {
			k, _ := strconv.Atoi(m[2])
			sp.dowNth[weekday(m[1])] |= 1 << k
			continue
		}
		switch {
		case part == "L":
			return nil, sp, false, false, fmt.Errorf("day-of-week field %q: L alone is ambiguous; write 6 for Saturday or 5L for the last Friday", out[dow])
		case part == "7":
			part = "0"
		case sundayRange.MatchString(part):
			m := sundayRange.FindStringSubmatch(part)
			from, _ := strconv.Atoi(m[1])
			step := 1
			if m[3] != "" {
				step, _ = strconv.Atoi(m[3])
			}
			if step < 1 {
				return nil, sp, false, false, fmt.Errorf("day-of-week field %q: step %q must be at least 1", out[dow], m[3])
			}
			var days []string
			for d := from; d <= 7; d += step {
				days = append(days, strconv.Itoa(d%7))
			}
			part = strings.Join(days, ",")
		}
		keep = append(keep, part)
	}
	if len(keep) == 0 {
		keep, blankDow = []string{"0"}, true
	}
	out[dow] = strings.Join(keep, ",")
	return out, sp, blankDom, blankDow, nil
}

// weekday is a day-of-week digit, 7 being Sunday as 0 is.
func weekday(digit string) uint {
	n, _ := strconv.Atoi(digit)
	return uint(n % 7)
}

// any reports whether the schedule uses a special day form.
func (sp special) any() bool {
	if sp.domLast || sp.dowLast != 0 {
		return true
	}
	for _, n := range sp.dowNth {
		if n != 0 {
			return true
		}
	}
	return false
}

// matchesDom reports whether day d of a month of n days is the month's last, as L asks.
func (sp special) matchesDom(d, n int) bool { return sp.domLast && d == n }

// matchesDow reports whether day d (weekday wd) of a month of n days is a last or k-th weekday
// the schedule names.
func (sp special) matchesDow(d, n int, wd time.Weekday) bool {
	if sp.dowLast&(1<<wd) != 0 && d+7 > n {
		return true
	}
	return sp.dowNth[wd]&(1<<((d-1)/7+1)) != 0
}

// monthDays is the number of days of month mo of year y.
func monthDays(y int, mo time.Month) int {
	return time.Date(y, mo+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
