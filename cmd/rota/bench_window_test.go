package main

import (
	"testing"
	"time"

	"github.com/rotahq/rota/bench"
)

// checkBenchConfig refuses values the workloads would otherwise quietly replace by defaults:
// --window 0 (or -5s) too, which a soak would replace by one-minute windows without a word.
func TestBenchRefusesNonPositiveWindow(t *testing.T) {
	for _, w := range []time.Duration{0, -5 * time.Second} {
		c := bench.Config{Jobs: 1, Batch: 1, Concurrency: 1, Workers: 1, Rate: 100, Duration: time.Minute, Window: w}
		if err := checkBenchConfig(c, true); err == nil {
			t.Errorf("--workload soak --window %v is accepted (the soak quietly uses %v)", w, bench.WindowDefault)
		}
	}
}
