package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/bench"
)

// The plots are drawn from the results they are given: a drain per worker count and system, a
// latency distribution per system; with neither there is nothing to write.
func TestWritePlots(t *testing.T) {
	dir := t.TempDir()
	if written, err := writePlots(dir, nil); err != nil || len(written) != 0 {
		t.Fatalf("no results: wrote %v (%v)", written, err)
	}
	var results []bench.Result
	for _, sys := range []string{"rota-postgres", "river-postgres-bench"} {
		for i, n := range []int{10, 100, 1000} {
			results = append(results, bench.Result{System: sys, Workload: bench.Drain, Workers: n, JobsPerSec: float64(1000 * (i + 1))})
		}
		ds := make([]time.Duration, 500)
		for i := range ds {
			ds[i] = time.Duration(i) * 10 * time.Microsecond
		}
		results = append(results, bench.Result{System: sys, Workload: bench.Latency, Latency: bench.Summarize(ds)})
	}
	written, err := writePlots(dir, results)
	if err != nil || len(written) != 2 {
		t.Fatalf("wrote %v (%v), want both plots", written, err)
	}
	for _, name := range written {
		b, err := os.ReadFile(name)
		if err != nil || !strings.Contains(string(b), "<svg") || !strings.Contains(string(b), "river-postgres-bench") {
			t.Errorf("%s is not an SVG naming the systems (%v)", name, err)
		}
	}
}
