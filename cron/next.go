package cron

import (
	"math"
	"time"
)

// lastInstant is the end of the searched range. Stopping at year 9999 keeps the calendar and
// epoch arithmetic far from where time.Time overflows, and no schedule needs more.
var lastInstant = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// Next returns the schedule's first occurrence strictly after after, in the schedule's zone, or
// the zero time if there is none (see the package doc). Occurrences fall on whole seconds.
// Only after's instant matters, not its zone.
func (s *Schedule) Next(after time.Time) time.Time {
	if !after.Before(lastInstant) {
		return time.Time{}
	}
	var t time.Time
	if s.every > 0 {
		t = s.nextEvery(after)
	} else {
		t = s.nextFields(after.Truncate(time.Second).Add(time.Second))
	}
	if t.IsZero() || t.After(lastInstant) {
		return time.Time{}
	}
	return t.In(s.loc)
}

// NextN returns up to n occurrences after after, in increasing order: fewer only when the
// schedule ends (see Next).
func (s *Schedule) NextN(after time.Time, n int) []time.Time {
	out := make([]time.Time, 0, min(max(n, 0), 64))
	for len(out) < n {
		t := s.Next(after)
		if t.IsZero() {
			break
		}
		out = append(out, t)
		after = t
	}
	return out
}

// nextEvery returns the first multiple of the interval since the Unix epoch after after.
func (s *Schedule) nextEvery(after time.Time) time.Time {
	d := int64(s.every / time.Second)
	u := after.Unix() // whole seconds, rounded down, so a multiple above u is above after
	if u > math.MaxInt64-d {
		return time.Time{}
	}
	k := u / d
	if u%d < 0 {
		k-- // floor, for instants before the epoch
	}
	return time.Unix((k+1)*d, 0)
}
