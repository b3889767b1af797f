package cron

import "time"

// searchYears bounds a search. The longest wait between two dates of a schedule that fires at all
// is eight years: February 29th across a century year that is not a leap year (2096 to 2104). One
// more year covers a search that starts just after one.
const searchYears = 9

// maxSteps bounds the walk over zone periods. Real zones change offset a few times a year, and Go
// adds a period boundary at each new year for years its TZ rule serves, so searchYears take a few
// dozen steps; the bound only keeps a pathological zone database from making Next unbounded.
const maxSteps = 256

// nextFields returns a field schedule's first occurrence at or after from, a whole second,
// applying the DST rule of the package doc, or the zero time if there is none.
//
// It walks the zone's periods of constant offset. Within one, the wall clock is the instant plus
// the offset, so nextWall finds the candidates and each maps to exactly one instant. The rule only
// matters where one period gives way to the next and the clock jumps.
func (s *Schedule) nextFields(from time.Time) time.Time {
	horizon := from.AddDate(searchYears, 0, 0)
	for range maxSteps {
		local := from.In(s.loc)
		_, off := local.Zone()
		start, end := zoneBounds(local)
		lo := wallClock(from, off)
		if !s.hourly && !start.IsZero() {
			_, prev := start.Add(-time.Second).In(s.loc).Zone()
			switch {
			case prev < off && from.Equal(start):
				// The clock jumped forward at start, skipping [start+prev, start+off). A
				// fixed-time schedule's times in there run once, now, at the first instant after
				// the gap.
				gapEnd := wallClock(start, off)
				if !s.nextWall(wallClock(start, prev), gapEnd).IsZero() {
					return start
				}
			case prev > off:
				// The clock jumped back at start, so [start+off, start+prev) is passing a second
				// time. A fixed-time schedule ran its times in there the first time, before start.
				if firstNew := wallClock(start, prev); lo.Before(firstNew) {
					lo = firstNew
				}
			}
		}
		last := horizon
		if !end.IsZero() && end.Before(horizon) {
			last = end
		}
		if w := s.nextWall(lo, wallClock(last, off)); !w.IsZero() {
			return w.Add(-time.Duration(off) * time.Second)
		}
		if last.Equal(horizon) {
			return time.Time{}
		}
		from = end
	}
	return time.Time{}
}

// wallClock returns the wall-clock reading of instant t at offset off (seconds east of UTC),
// carried as a UTC time as nextWall expects.
func wallClock(t time.Time, off int) time.Time {
	return t.Add(time.Duration(off) * time.Second).UTC()
}

// zoneBounds is Time.ZoneBounds, corrected for go.dev/issue/81583: in years served by a zone's TZ
// rule (after its last listed transition, 2037 for most zones), Go ends the year's last period
// 365 days after the year starts, so in a leap year an instant on December 31st (UTC) gets an end
// at or before itself, and walking from end to end would stand still. That period really runs to
// the end of the UTC year, where Go starts the next year's first one.
func zoneBounds(t time.Time) (start, end time.Time) {
	start, end = t.ZoneBounds()
	if !end.IsZero() && !end.After(t) {
		end = time.Date(t.UTC().Year()+1, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return start, end
}
