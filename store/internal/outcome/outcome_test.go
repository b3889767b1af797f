package outcome

import (
	"reflect"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

func TestValidate(t *testing.T) {
	ok := []store.Outcome{
		{ID: 1, State: store.StateCompleted}, {ID: 2, State: store.StateRetryable},
		{ID: 3, State: store.StateScheduled}, {ID: 4, State: store.StateAvailable},
		{ID: 5, State: store.StateCancelled}, {ID: 6, State: store.StateDiscarded},
	}
	if err := Validate(ok); err != nil {
		t.Fatalf("Validate(every outcome state) = %v", err)
	}
	for _, s := range []store.State{store.StateRunning, store.StateExpired, "", "done"} {
		if err := Validate(append(ok, store.Outcome{ID: 7, State: s})); err == nil {
			t.Errorf("Validate accepted state %q", s)
		}
	}
}

func TestRunAt(t *testing.T) {
	at := time.Unix(1e9, 0)
	for _, c := range []struct {
		o      store.Outcome
		wantAt time.Time
		now    bool
	}{
		{store.Outcome{State: store.StateRetryable}, time.Time{}, true},
		{store.Outcome{State: store.StateScheduled}, time.Time{}, true},
		{store.Outcome{State: store.StateRetryable, RunAt: at}, at, false},
		{store.Outcome{State: store.StateAvailable}, time.Time{}, false},
		{store.Outcome{State: store.StateAvailable, RunAt: at}, at, false},
		{store.Outcome{State: store.StateCompleted, RunAt: at}, time.Time{}, false},
	} {
		if gotAt, now := RunAt(c.o); !gotAt.Equal(c.wantAt) || now != c.now {
			t.Errorf("RunAt(%s, %v) = %v, %v; want %v, %v", c.o.State, c.o.RunAt, gotAt, now, c.wantAt, c.now)
		}
	}
}

func TestRounds(t *testing.T) {
	ids := func(ids ...int64) []store.Outcome {
		out := make([]store.Outcome, len(ids))
		for i, id := range ids {
			out[i].ID = id
		}
		return out
	}
	for _, c := range []struct {
		in   []store.Outcome
		want [][]int
	}{
		{nil, nil},
		{ids(1, 2, 3), [][]int{{0, 1, 2}}},
		{ids(1, 2, 1, 3, 1, 2), [][]int{{0, 1, 3}, {2, 5}, {4}}},
	} {
		if got := Rounds(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Rounds(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
