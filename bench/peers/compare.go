package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/rotahq/rota/bench"
)

// writeComparison prints one row per result with rota's ratio to it: rota's figure divided by the
// peer's, for the same workload, rota on the comparable store (SQLite for River on SQLite,
// PostgreSQL for River on PostgreSQL, Redis for Asynq and BullMQ, or PostgreSQL, the other store
// made for a fleet, when rota on Redis did not run). A jobs/s ratio above 1 means rota is faster;
// a latency or CPU-per-job ratio below 1 means rota's is lower.
func writeComparison(w io.Writer, results []bench.Result) error {
	targets := allTargets(stores{})
	byKey := byResultKey(results)
	fmt.Fprintln(w, "rota/peer: jobs/s above 1 = rota faster; cpu/job, p50, p99 below 1 = rota's lower. p50/p99: insert→start for latency, one call for the inserts; cpu/job: the whole machine's CPU time per job.")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tworkload\tjobs/s\tcpu/job\tp50\tp99\t compared with\trota/peer jobs/s\trota/peer cpu/job\trota/peer p50\trota/peer p99\t")
	for _, r := range results {
		p50, p99 := "-", "-"
		if r.Latency != nil {
			p50, p99 = bench.FormatDuration(r.Latency.P50), bench.FormatDuration(r.Latency.P99)
		}
		rate, cpu := bench.FormatRate(r.JobsPerSec), bench.FormatCPU(r.CPUPerJob)
		if r.Err != "" {
			rate = "failed"
		}
		base, ok := baseline(targets, byKey, r)
		if !ok || r.Err != "" || base.Err != "" {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t \t\t\t\t\t\n", r.System, r.Label(), rate, cpu, p50, p99)
			continue
		}
		rRate, rP50, rP99 := "-", "-", "-"
		if r.JobsPerSec > 0 {
			rRate = ratio(base.JobsPerSec / r.JobsPerSec)
		}
		rCPU := durRatio(base.CPUPerJob, r.CPUPerJob)
		if base.Latency != nil && r.Latency != nil {
			rP50 = durRatio(base.Latency.P50, r.Latency.P50)
			rP99 = durRatio(base.Latency.P99, r.Latency.P99)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t %s\t%s\t%s\t%s\t%s\t\n", r.System, r.Label(), rate, cpu, p50, p99, base.System, rRate, rCPU, rP50, rP99)
	}
	return tw.Flush()
}

func durRatio(rota, peer time.Duration) string {
	if rota <= 0 || peer <= 0 {
		return "-"
	}
	return ratio(float64(rota) / float64(peer))
}

func ratio(x float64) string {
	if x >= 10 {
		return fmt.Sprintf("%.0f×", x)
	}
	return fmt.Sprintf("%.2f×", x)
}

// baseline is the rota result r is compared with: that of the first of its system's baselines
// that ran the same workload (byKey by resultKey).
func baseline(targets map[string]target, byKey map[string]bench.Result, r bench.Result) (bench.Result, bool) {
	for _, b := range targets[r.System].baselines {
		if base, ok := byKey[resultKey(b, r)]; ok {
			return base, true
		}
	}
	return bench.Result{}, false
}

// byResultKey indexes results by resultKey.
func byResultKey(results []bench.Result) map[string]bench.Result {
	byKey := make(map[string]bench.Result, len(results))
	for _, r := range results {
		byKey[resultKey(r.System, r)] = r
	}
	return byKey
}

// resultKey is what a result is compared by: the system and the workload, and the worker count,
// which a -sweep varies.
func resultKey(system string, r bench.Result) string {
	return fmt.Sprintf("%s/%s/%d", system, r.Workload, r.Workers)
}

// writeMedians prints, for each system and workload of the first round, the median over the
// rounds of its figures and of its ratios to rota (each round's own ratio, as writeComparison
// computes it), with the range of the jobs/s and p99 ratios: on a shared machine whose speed
// drifts from minute to minute, a ratio measured side by side round after round says more than
// any single figure.
func writeMedians(w io.Writer, rounds [][]bench.Result) error {
	targets := allTargets(stores{})
	byKeys := make([]map[string]bench.Result, len(rounds))
	for i, rr := range rounds {
		byKeys[i] = byResultKey(rr)
	}
	fmt.Fprintln(w, "Each figure is the median over the rounds of the runs that finished; each ratio the median of the rounds' own ratios, and their range.")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tworkload\truns\tjobs/s\tcpu/job\tp50\tp99\t compared with\trota/peer jobs/s\trange\trota/peer cpu/job\trota/peer p99\trange\t")
	for _, first := range rounds[0] {
		key := resultKey(first.System, first)
		var rates, cpus, p50s, p99s, rRates, rCPUs, rP99s []float64
		base := ""
		for _, byKey := range byKeys {
			r, ok := byKey[key]
			if !ok || r.Err != "" {
				continue
			}
			rates = append(rates, r.JobsPerSec)
			cpus = append(cpus, float64(r.CPUPerJob))
			if r.Latency != nil {
				p50s = append(p50s, float64(r.Latency.P50))
				p99s = append(p99s, float64(r.Latency.P99))
			}
			br, ok := baseline(targets, byKey, r)
			if !ok || br.Err != "" {
				continue
			}
			base = br.System
			if r.JobsPerSec > 0 {
				rRates = append(rRates, br.JobsPerSec/r.JobsPerSec)
			}
			if br.CPUPerJob > 0 && r.CPUPerJob > 0 {
				rCPUs = append(rCPUs, float64(br.CPUPerJob)/float64(r.CPUPerJob))
			}
			if br.Latency != nil && r.Latency != nil && r.Latency.P99 > 0 {
				rP99s = append(rP99s, float64(br.Latency.P99)/float64(r.Latency.P99))
			}
		}
		if len(rates) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t0\tfailed\t\t\t\t \t\t\t\t\t\n", first.System, first.Label())
			continue
		}
		p50, p99 := "-", "-"
		if len(p99s) > 0 {
			p50 = bench.FormatDuration(time.Duration(median(p50s)))
			p99 = bench.FormatDuration(time.Duration(median(p99s)))
		}
		row := fmt.Sprintf("%s\t%s\t%d\t%s\t%s\t%s\t%s\t ", first.System, first.Label(), len(rates),
			bench.FormatRate(median(rates)), bench.FormatCPU(time.Duration(median(cpus))), p50, p99)
		if len(rRates) == 0 {
			fmt.Fprintln(tw, row+"\t\t\t\t\t\t")
			continue
		}
		rCPU, rP99, rP99Range := "-", "-", "-"
		if len(rCPUs) > 0 {
			rCPU = ratio(median(rCPUs))
		}
		if len(rP99s) > 0 {
			rP99, rP99Range = ratio(median(rP99s)), ratioRange(rP99s)
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%s\t\n", row, base, ratio(median(rRates)), ratioRange(rRates), rCPU, rP99, rP99Range)
	}
	return tw.Flush()
}

// ratioRange is the lowest and highest of the ratios xs.
func ratioRange(xs []float64) string {
	return ratio(slices.Min(xs)) + "–" + ratio(slices.Max(xs))
}

// median is the middle of xs (the mean of the two middle ones for an even count).
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
