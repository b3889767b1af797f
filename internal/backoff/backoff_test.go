package backoff

import (
	"testing"
	"time"
)

func TestDelayDoublesWithinJitterBounds(t *testing.T) {
	p := Policy{Base: time.Second, Max: time.Hour}
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 5: 16 * time.Second} {
		lo, hi := p.jittered(attempt, 0), p.jittered(attempt, 0.999999)
		if lo != want/2 || hi >= want || hi < want*99/100 {
			t.Errorf("attempt %d: range [%v, %v], want [%v, %v)", attempt, lo, hi, want/2, want)
		}
	}
}

func TestDelayIsCappedWithoutOverflow(t *testing.T) {
	p := Policy{Base: time.Second, Max: time.Minute}
	for _, attempt := range []int{7, 40, 100, 10000} {
		if d := p.jittered(attempt, 0.999999); d > time.Minute || d < 30*time.Second {
			t.Errorf("attempt %d: delay %v outside [30s, 1m]", attempt, d)
		}
	}
}

func TestZeroPolicyUsesDefaults(t *testing.T) {
	if got := (Policy{}).jittered(1, 0); got != BaseDefault/2 {
		t.Errorf("zero policy first delay = %v, want %v", got, BaseDefault/2)
	}
	if d := (Policy{}).Delay(1); d < BaseDefault/2 || d >= BaseDefault {
		t.Errorf("Delay(1) = %v outside [%v, %v)", d, BaseDefault/2, BaseDefault)
	}
}
