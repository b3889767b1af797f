package claimorder

import (
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

func TestSort(t *testing.T) {
	at := time.Unix(1e9, 0)
	jobs := []*store.JobRow{
		{ID: 5, Priority: 0, RunAt: at},
		{ID: 4, Priority: 0, RunAt: at.Add(-time.Second)},
		{ID: 3, Priority: 1, RunAt: at.Add(time.Hour)},
		{ID: 2, Priority: 0, RunAt: at},
		{ID: 1, Priority: -1, RunAt: at.Add(-time.Hour)},
	}
	Sort(jobs)
	got := make([]int64, len(jobs))
	for i, j := range jobs {
		got[i] = j.ID
	}
	// Priority first, then the older RunAt, then the lower id.
	if want := []int64{3, 4, 2, 5, 1}; !slices.Equal(got, want) {
		t.Fatalf("claim order %v, want %v", got, want)
	}
}
