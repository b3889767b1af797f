package cron

import (
	"slices"
	"testing"
	"time"
)

// testZones cover both hemispheres and a 30-minute shift.
var testZones = []string{"America/New_York", "Europe/Berlin", "Australia/Sydney", "Australia/Lord_Howe"}

func mustParse(t testing.TB, expr, zone string) *Schedule {
	t.Helper()
	s, err := Parse(expr, zone)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustZone(t testing.TB, zone string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// until returns the occurrences in [from, to).
func until(s *Schedule, from, to time.Time) []time.Time {
	var out []time.Time
	for t := s.Next(from.Add(-time.Nanosecond)); !t.IsZero() && t.Before(to); t = s.Next(t) {
		out = append(out, t)
	}
	return out
}

// format renders times with their offsets, so a wrong zone shows as clearly as a wrong instant.
func format(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Format(time.RFC3339)
	}
	return out
}

func equal(a, b []string) bool { return slices.Equal(a, b) }
