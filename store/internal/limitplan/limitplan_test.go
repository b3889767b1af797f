package limitplan

import (
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

func jobs(kinds ...string) []*store.JobRow {
	out := make([]*store.JobRow, len(kinds))
	for i, k := range kinds {
		out[i] = &store.JobRow{Kind: k}
	}
	return out
}

func wantKinds(t *testing.T, p *Plan, kinds []string, caps []int) {
	t.Helper()
	gk, gc := p.Kinds()
	if !slices.Equal(gk, kinds) || !slices.Equal(gc, caps) {
		t.Fatalf("Kinds() = %v %v, want %v %v", gk, gc, kinds, caps)
	}
}

// The queue limit bounds the budget, kind limits their kinds; the stricter of a limit's cap and
// rate holds, and a kind held back entirely is left out.
func TestAllowances(t *testing.T) {
	p := New("q", []string{"a", "b", "c"}, 10, []Usage{
		{Limit: store.Limit{Scope: store.LimitQueue, Name: "q", MaxRunning: 5}, Running: 1},
		{Limit: store.Limit{Scope: store.LimitKind, Name: "a", MaxRunning: 3, Rate: 4, Period: time.Minute}, Started: 2},
		{Limit: store.Limit{Scope: store.LimitKind, Name: "b", MaxRunning: 1}, Running: 2},
	})
	if p.Budget != 4 {
		t.Fatalf("Budget = %d, want 4", p.Budget)
	}
	wantKinds(t, p, []string{"a", "c"}, []int{2, 4})
}

// A round that came up short because a kind reached its cap asks for another without that kind;
// one that came up short with no kind capped means the queue ran dry.
func TestRounds(t *testing.T) {
	p := New("q", []string{"a", "b"}, 4, []Usage{
		{Limit: store.Limit{Scope: store.LimitKind, Name: "a", MaxRunning: 1}},
	})
	wantKinds(t, p, []string{"a", "b"}, []int{1, 4})
	if !p.Took(jobs("a", "b"), 4) {
		t.Fatal("a round short of a capped kind ended the claim")
	}
	wantKinds(t, p, []string{"b"}, []int{2})
	if p.Took(jobs("b"), 2) {
		t.Fatal("a round short with no kind capped asked for another")
	}
	if p.Budget != 1 {
		t.Fatalf("Budget = %d, want 1", p.Budget)
	}
}

// Starts are reported for rate limits only, counted per limit.
func TestStarts(t *testing.T) {
	p := New("q", []string{"a", "b"}, 10, []Usage{
		{Limit: store.Limit{Scope: store.LimitQueue, Name: "q", Rate: 100, Period: time.Hour}},
		{Limit: store.Limit{Scope: store.LimitKind, Name: "a", Rate: 5, Period: time.Second}},
		{Limit: store.Limit{Scope: store.LimitKind, Name: "b", MaxRunning: 5}},
	})
	p.Took(jobs("a", "b", "a"), 10)
	want := []Start{
		{Scope: store.LimitQueue, Name: "q", Period: time.Hour.Microseconds(), N: 3},
		{Scope: store.LimitKind, Name: "a", Period: time.Second.Microseconds(), N: 2},
	}
	if got := p.Starts(); !slices.Equal(got, want) {
		t.Fatalf("Starts() = %+v, want %+v", got, want)
	}
}
