package ids

import (
	"slices"
	"testing"
)

func TestUnique(t *testing.T) {
	for _, c := range []struct{ in, want []int64 }{
		{nil, nil},
		{[]int64{7}, []int64{7}},
		{[]int64{3, 1, 3, 2, 1}, []int64{3, 1, 2}},
		{[]int64{5, 5, 5}, []int64{5}},
	} {
		if got := Unique(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Unique(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
