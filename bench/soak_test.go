package bench

import (
	"testing"
	"time"
)

// A soak's last window ends with the run, not at its tick: the jobs that start just after the
// run's end are in it rather than in a window of their own.
func TestSoakLastWindowEndsWithTheRun(t *testing.T) {
	tick, end := make(chan time.Time), make(chan struct{})
	taken := make(chan int, 8)
	done := make(chan struct{})
	go func() {
		defer close(done)
		n := 0
		closeWindows(tick, end, 4, func() {
			n++
			taken <- n
		})
	}()
	for want := 1; want <= 3; want++ {
		tick <- time.Time{}
		if got := <-taken; got != want {
			t.Fatalf("tick %d closed window %d", want, got)
		}
	}
	tick <- time.Time{} // the last window's tick, before the run's last jobs started
	close(end)
	<-done
	close(taken)
	var rest []int
	for n := range taken {
		rest = append(rest, n)
	}
	if len(rest) != 1 || rest[0] != 4 {
		t.Fatalf("after the last tick and the run's end, windows %v closed; want [4]", rest)
	}
}
