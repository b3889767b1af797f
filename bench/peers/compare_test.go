package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/bench"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}

// The summary's ratio is the median of each round's own ratio, not the ratio of the medians: the
// rounds here say 2×, 6× and 2× (median 2×), where the medians of the figures would say 2.5×;
// Asynq's failed round counts in none of its figures.
func TestMediansTakeEachRoundsRatio(t *testing.T) {
	round := func(rota, asynq float64) []bench.Result {
		return []bench.Result{
			{System: "rota-redis", Workload: bench.Drain, Workers: 100, JobsPerSec: rota, CPUPerJob: 50 * time.Microsecond,
				Latency: &bench.Percentiles{P50: time.Millisecond, P99: time.Duration(rota) * time.Nanosecond}},
			{System: "asynq-redis", Workload: bench.Drain, Workers: 100, JobsPerSec: asynq, CPUPerJob: 150 * time.Microsecond,
				Latency: &bench.Percentiles{P50: time.Millisecond, P99: 40_000}},
		}
	}
	failed := round(1, 1)
	failed[1].Err = "timeout"
	var b strings.Builder
	if err := writeMedians(&b, [][]bench.Result{round(20_000, 10_000), round(30_000, 5_000), round(40_000, 20_000), failed}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	// p99: rota's 20, 30 and 40 µs against Asynq's 40 µs: 0.50×, 0.75×, 1.00×.
	for _, want := range []string{"2.00×–6.00×", "2.00×", "0.33×", "0.75×", "0.50×–1.00×"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`asynq-redis +drain +3 `).MatchString(out) {
		t.Errorf("asynq's finished runs are not counted as 3:\n%s", out)
	}
}
