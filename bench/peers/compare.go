package main

import (
	"fmt"
	"io"
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
	byKey := map[string]bench.Result{}
	for _, r := range results {
		byKey[resultKey(r.System, r)] = r
	}
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
		var (
			base bench.Result
			ok   bool
		)
		for _, b := range targets[r.System].baselines {
			if base, ok = byKey[resultKey(b, r)]; ok {
				break
			}
		}
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

// resultKey is what a result is compared by: the system and the workload, and the worker count,
// which a -sweep varies.
func resultKey(system string, r bench.Result) string {
	return fmt.Sprintf("%s/%s/%d", system, r.Workload, r.Workers)
}
