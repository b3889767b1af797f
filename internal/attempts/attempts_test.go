package attempts

import (
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

var t0 = time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)

func TestOf(t *testing.T) {
	failed := store.AttemptError{Attempt: 1, At: t0.Add(2 * time.Second), Error: "boom", Node: "a", Duration: 2 * time.Second}
	tests := []struct {
		name string
		job  store.JobRow
		want []Attempt
	}{
		{"never run", store.JobRow{State: store.StateAvailable}, nil},
		{"completed after a failure", store.JobRow{State: store.StateCompleted, Attempt: 2, Errors: []store.AttemptError{failed},
			AttemptedAt: t0.Add(time.Minute), AttemptedBy: "b", FinalizedAt: t0.Add(time.Minute + 3*time.Second)},
			[]Attempt{
				{Number: 1, Node: "a", Started: t0, Duration: 2 * time.Second, Outcome: "error", Error: "boom"},
				{Number: 2, Node: "b", Started: t0.Add(time.Minute), Duration: 3 * time.Second, Outcome: "completed"},
			}},
		{"running", store.JobRow{State: store.StateRunning, Attempt: 1, AttemptedAt: t0, AttemptedBy: "a", Owner: "a"},
			[]Attempt{{Number: 1, Node: "a", Started: t0, Duration: 5 * time.Second, Running: true, Outcome: "running"}}},
		{"retryable", store.JobRow{State: store.StateRetryable, Attempt: 1, AttemptedAt: t0, AttemptedBy: "a",
			Errors: []store.AttemptError{failed}},
			[]Attempt{{Number: 1, Node: "a", Started: t0, Duration: 2 * time.Second, Outcome: "error", Error: "boom"}}},
		{"snoozed", store.JobRow{State: store.StateScheduled, Attempt: 0, AttemptedAt: t0, AttemptedBy: "a"}, nil},
	}
	for _, tt := range tests {
		got := Of(&tt.job, t0.Add(5*time.Second))
		if len(got) != len(tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s: [%d] = %+v, want %+v", tt.name, i, got[i], tt.want[i])
			}
		}
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "-", 1500 * time.Microsecond: "2ms", 90 * time.Second: "1m30s", 7 * time.Microsecond: "7µs"} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}
