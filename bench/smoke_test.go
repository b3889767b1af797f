package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestWorkloadsSmoke runs every workload, tiny, on a real SQLite store, so the code that produces
// the published figures is itself tested. It checks counts and shapes, never speed.
func TestWorkloadsSmoke(t *testing.T) {
	cfg := Config{Jobs: 300, Batch: 70, Concurrency: 4, Workers: 10, Rate: 200, Duration: 300 * time.Millisecond}
	results, err := RunAll(t.Context(), Rota("rota-sqlite", SQLite(t.TempDir())), Workloads, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(Workloads) {
		t.Fatalf("got %d results, want %d", len(results), len(Workloads))
	}
	for i, r := range results {
		if r.Workload != Workloads[i] || r.System != "rota-sqlite" {
			t.Errorf("result %d is %s/%s", i, r.System, r.Workload)
		}
		want := cfg.Jobs
		if r.Workload == Latency {
			want = 60 // 200 jobs/s for 0.3 s
		}
		if r.Jobs != want || r.Elapsed <= 0 || r.JobsPerSec <= 0 {
			t.Errorf("%s: jobs %d (want %d), elapsed %v, %v jobs/s", r.Workload, r.Jobs, want, r.Elapsed, r.JobsPerSec)
		}
		hasLatency := r.Workload != Drain
		if (r.Latency != nil) != hasLatency {
			t.Errorf("%s: latency %+v, want one: %v", r.Workload, r.Latency, hasLatency)
		}
	}
	if n := results[3].Latency.N; n != 60 {
		t.Errorf("latency samples: %d, want one per job (60)", n)
	}
	if n := results[0].Latency.N; n != 5 {
		t.Errorf("insert-many calls: %d, want ceil(300/70) = 5", n)
	}

	var table bytes.Buffer
	if err := WriteTable(&table, results); err != nil {
		t.Fatal(err)
	}
	for _, w := range Workloads {
		if !strings.Contains(table.String(), string(w)) {
			t.Errorf("table lacks %s:\n%s", w, table.String())
		}
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, results); err != nil {
		t.Fatal(err)
	}
	var back []map[string]any
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back) != len(results) {
		t.Fatalf("JSON does not read back (%v): %s", err, js.String())
	}
	if _, ok := back[3]["latency"].(map[string]any)["p99_ms"]; !ok {
		t.Errorf("latency JSON lacks p99_ms: %s", js.String())
	}
}

func TestPercentiles(t *testing.T) {
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(100-i) * time.Millisecond // reversed: percentiles must sort
	}
	p := percentiles(ds)
	if p.N != 100 || p.P50 != 50*time.Millisecond || p.P90 != 90*time.Millisecond ||
		p.P99 != 99*time.Millisecond || p.Max != 100*time.Millisecond {
		t.Errorf("got %+v", p)
	}
	if p := percentiles([]time.Duration{7}); p.P50 != 7 || p.P99 != 7 || p.Max != 7 {
		t.Errorf("one sample: %+v", p)
	}
	if percentiles(nil) != nil {
		t.Error("no samples should give nil")
	}
}

// Dist holds the nearest-rank quantiles k/1000: the k/1000 quantile of n samples is the
// smallest r-th sample with r/n at least k/1000, found here by counting up.
func TestPercentilesDist(t *testing.T) {
	for _, n := range []int{1, 7, 100, 1000, 5000} {
		ds := make([]time.Duration, n)
		for i := range ds {
			ds[i] = time.Duration(i + 1) // the r-th smallest is r
		}
		p := percentiles(ds)
		for k, got := range p.Dist {
			r := 1
			for r*distPoints < (k+1)*n {
				r++
			}
			if got != time.Duration(r) {
				t.Fatalf("n=%d: the %d/1000 quantile is sample %d, want %d", n, k+1, got, r)
			}
		}
	}
}

func TestFormat(t *testing.T) {
	for in, want := range map[float64]string{0: "-", 999.4: "999", 1234.5: "1,235", 1234567: "1,234,567"} {
		if got := FormatRate(in); got != want {
			t.Errorf("FormatRate(%v) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[time.Duration]string{1500 * time.Microsecond: "1.50ms", 57 * time.Millisecond: "57ms"} {
		if got := FormatDuration(in); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", in, got, want)
		}
	}
	if _, err := ParseWorkload("drain"); err != nil {
		t.Error(err)
	}
	if _, err := ParseWorkload("nope"); err == nil {
		t.Error("ParseWorkload accepted an unknown name")
	}
}

// A soak reports one window per Config.Window, together covering every job started, with the
// process's memory (and the Go runtime's share of it) and the store's size. The jobs that start
// just after the run's end are in its last window, not in one of their own.
func TestSoakSmoke(t *testing.T) {
	cfg := Config{Workers: 10, Rate: 200, Duration: 1200 * time.Millisecond, Window: 300 * time.Millisecond}
	res, err := Run(t.Context(), Rota("rota-sqlite", SQLite(t.TempDir())), Soak, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Jobs != 240 || len(res.Windows) < 3 || len(res.Windows) > 4 {
		t.Fatalf("jobs %d, %d windows: want 240 jobs in 4 windows (3 when the machine delayed a tick)", res.Jobs, len(res.Windows))
	}
	started := 0
	for _, w := range res.Windows {
		started += w.Started
		if w.RSS <= 0 || w.StoreBytes <= 0 || w.GoHeap <= 0 || w.GoBytes < w.GoHeap {
			t.Errorf("window %v: rss %d, Go %d, Go heap %d, store %d bytes", w.At, w.RSS, w.GoBytes, w.GoHeap, w.StoreBytes)
		}
	}
	if started != 240 {
		t.Errorf("windows counted %d starts of 240 jobs", started)
	}
	var out bytes.Buffer
	if err := WriteWindows(&out, res); err != nil || !strings.Contains(out.String(), "MiB") {
		t.Errorf("windows table (%v):\n%s", err, out.String())
	}
}

// The bare loop drains every job once: its figure is the limit rota's is read against.
func TestSQLiteBareDrains(t *testing.T) {
	res, err := Run(t.Context(), SQLiteBare(t.TempDir()), Drain, Config{Jobs: 1000, Workers: 10})
	if err != nil {
		t.Fatal(err)
	}
	if res.System != "sqlite-bare" || res.Jobs != 1000 || res.JobsPerSec <= 0 {
		t.Fatalf("bare drain: %+v", res)
	}
}
