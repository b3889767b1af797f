package store

import "testing"

// Every outcome state keeps its meaning under a cancel request except those that would run the
// job again.
func TestCancelRequestedState(t *testing.T) {
	for s, want := range map[State]State{
		StateRetryable: StateCancelled,
		StateScheduled: StateCancelled,
		StateAvailable: StateCancelled,
		StateCompleted: StateCompleted,
		StateCancelled: StateCancelled,
		StateDiscarded: StateDiscarded,
	} {
		if got := CancelRequestedState(s); got != want {
			t.Errorf("CancelRequestedState(%s) = %s, want %s", s, got, want)
		}
	}
}

func TestRescueState(t *testing.T) {
	for _, c := range []struct {
		attempt, max int
		cancel       bool
		want         State
	}{
		{1, 3, false, StateRetryable},
		{3, 3, false, StateDiscarded},
		{4, 3, false, StateDiscarded},
		{1, 3, true, StateCancelled},
		{3, 3, true, StateCancelled},
	} {
		if got := RescueState(c.attempt, c.max, c.cancel); got != c.want {
			t.Errorf("RescueState(%d, %d, %v) = %s, want %s", c.attempt, c.max, c.cancel, got, c.want)
		}
	}
}
