package chanloop

import (
	"context"
	"slices"
	"testing"
)

func TestEachStopsWhenTheChannelCloses(t *testing.T) {
	ch := make(chan int, 3)
	ch <- 1
	ch <- 2
	close(ch)
	var got []int
	Each(context.Background(), ch, func(v int) { got = append(got, v) })
	if !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("got %v", got)
	}
}

func TestEachStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	Each(ctx, make(chan int), func(int) { t.Fatal("called with nothing sent") })
}
