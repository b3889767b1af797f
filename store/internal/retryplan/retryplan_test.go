package retryplan

import (
	"maps"
	"slices"
	"testing"

	"github.com/rotahq/rota/store"
)

func TestAgain(t *testing.T) {
	// 10 is outside the workflow and was discarded; 1 waited for it, 2 for 1; 3 failed alone;
	// 4 waited for 3; 5 ignores failed dependencies and waited for 10; 6 completed.
	steps := []Step{
		{ID: 1, State: store.StateCancelled, DependsOn: []int64{10}},
		{ID: 2, State: store.StateCancelled, DependsOn: []int64{1}},
		{ID: 3, State: store.StateDiscarded},
		{ID: 4, State: store.StateCancelled, DependsOn: []int64{3}},
		{ID: 5, State: store.StateDiscarded, DependsOn: []int64{10}, IgnoreFailed: true},
		{ID: 6, State: store.StateCompleted},
	}
	states := map[int64]store.State{10: store.StateDiscarded}
	for _, st := range steps {
		states[st.ID] = st.State
	}
	again := Again(steps, states)
	if got := slices.Sorted(maps.Keys(again)); !slices.Equal(got, []int64{3, 4, 5}) {
		t.Errorf("Again = %v, want [3 4 5]", got)
	}
	for _, tc := range []struct {
		dep  int64
		want bool
	}{{3, true}, {10, false}, {6, false}, {99, false}} {
		if got := Waits(tc.dep, again, states); got != tc.want {
			t.Errorf("Waits(%d) = %v, want %v", tc.dep, got, tc.want)
		}
	}
}

func TestRewait(t *testing.T) {
	// 1 and 2 failed and run again; 3 completed; 4 is a pending callback that ignores failed
	// dependencies and named 1 twice; 5 is pending, does not ignore them, and waits for 3 alone;
	// 6 ignores them but has run already.
	steps := []Step{
		{ID: 1, State: store.StateDiscarded},
		{ID: 2, State: store.StateCancelled},
		{ID: 3, State: store.StateCompleted},
		{ID: 4, State: store.StatePending, DependsOn: []int64{1, 2, 3, 1}, IgnoreFailed: true},
		{ID: 5, State: store.StatePending, DependsOn: []int64{3}},
		{ID: 6, State: store.StateCompleted, DependsOn: []int64{1}, IgnoreFailed: true},
	}
	got := Rewait(steps, map[int64]bool{1: true, 2: true})
	if want := map[int64][]int64{4: {1, 2}}; !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("Rewait = %v, want %v", got, want)
	}
}
