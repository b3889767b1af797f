package webguard

import (
	"strconv"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

func TestLimiterAllowsABurstThenOneFailurePerInterval(t *testing.T) {
	clock := clockwork.NewFakeClock()
	l := NewLimiter(clock, 10, 6*time.Second, 0)
	for i := range 10 {
		if w := l.Wait("a"); w != 0 {
			t.Fatalf("failure %d: wait %v, want none within the burst", i+1, w)
		}
		l.Fail("a")
	}
	if w := l.Wait("a"); w != 6*time.Second {
		t.Fatalf("after the burst: wait %v, want 6s", w)
	}
	if w := l.Wait("b"); w != 0 {
		t.Fatalf("another client waits %v", w)
	}
	clock.Advance(5 * time.Second)
	if w := l.Wait("a"); w != time.Second {
		t.Fatalf("5s later: wait %v, want 1s", w)
	}
	clock.Advance(time.Second)
	if w := l.Wait("a"); w != 0 {
		t.Fatalf("6s later: wait %v, want none", w)
	}
	l.Fail("a")
	if w := l.Wait("a"); w != 6*time.Second {
		t.Fatalf("a failure after earning one try: wait %v, want 6s", w)
	}
	// A client that stays away gets its whole burst back.
	clock.Advance(time.Hour)
	for i := range 10 {
		if l.Wait("a") != 0 {
			t.Fatalf("an hour later, failure %d had to wait", i+1)
		}
		l.Fail("a")
	}
}

// Failures counted together (requests checked at the same time) are each waited for.
func TestLimiterOwesForFailuresBeyondTheBurst(t *testing.T) {
	clock := clockwork.NewFakeClock()
	l := NewLimiter(clock, 10, 6*time.Second, 0)
	for range 20 {
		l.Fail("a")
	}
	if w := l.Wait("a"); w != 66*time.Second {
		t.Fatalf("after 20 failures at once: wait %v, want 66s (11 over the burst)", w)
	}
	if RetryAfter(1500*time.Millisecond) != 2 || RetryAfter(6*time.Second) != 6 {
		t.Fatal("RetryAfter does not round up to whole seconds")
	}
}

func TestLimiterForgetsTheOldestClientWhenFull(t *testing.T) {
	clock := clockwork.NewFakeClock()
	l := NewLimiter(clock, 1, time.Minute, 3)
	for i := range 4 {
		l.Fail(strconv.Itoa(i))
		clock.Advance(time.Second)
	}
	if n := l.Clients(); n != 3 {
		t.Fatalf("%d clients remembered, want 3", n)
	}
	if w := l.Wait("0"); w != 0 {
		t.Fatalf("the oldest client, forgotten, still waits %v", w)
	}
	if w := l.Wait("3"); w == 0 {
		t.Fatal("the newest client does not wait")
	}
}
