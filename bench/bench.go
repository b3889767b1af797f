// Package bench generates the workloads rota is measured by: batch inserts, concurrent one-by-one
// inserts, the drain of a queued backlog, and insert→start latency at a steady rate. The Go
// benchmarks in this package, the `rota bench` command and the peer comparison in bench/peers all
// run the same code, so their figures can be put side by side.
//
// Workloads drive a Target, not rota directly, so other job systems can be measured the same way
// (bench/peers adds River and Asynq without making them dependencies of rota). Every workload
// starts on an empty system: a backlog left by one must never be drained by the next.
//
// This package measures; it never judges. No test here asserts a speed: a shared two-core machine
// drifts too much for that, which is why peers are compared in one run and reported as ratios.
package bench

import (
	"fmt"
	"time"
)

// Workload names one of the measured workloads.
type Workload string

// The workloads, in the order they run.
const (
	// InsertMany inserts Config.Jobs jobs in calls of Config.Batch jobs each.
	InsertMany Workload = "insert-many"
	// InsertOne inserts Config.Jobs jobs one per call from Config.Concurrency goroutines: what a
	// web service enqueueing from its request handlers does.
	InsertOne Workload = "insert-one"
	// Drain queues Config.Jobs no-op jobs, then measures from the workers' start until every job
	// is recorded completed.
	Drain Workload = "drain"
	// Latency inserts one job at a time at Config.Rate jobs/s for Config.Duration while workers
	// run, and records how long each job waited between its insert returning and its handler
	// starting.
	Latency Workload = "latency"
)

// Workloads lists every workload in the order "all" runs them.
var Workloads = []Workload{InsertMany, InsertOne, Drain, Latency}

// ParseWorkload accepts a workload's name.
func ParseWorkload(s string) (Workload, error) {
	for _, w := range append(Workloads, Soak) {
		if string(w) == s {
			return w, nil
		}
	}
	return "", fmt.Errorf("unknown workload %q: want insert-many, insert-one, drain, latency or soak", s)
}

// Defaults for Config, sized so one workload takes seconds on a small machine.
const (
	JobsDefault        = 20_000
	BatchDefault       = 1_000
	ConcurrencyDefault = 10
	// WorkersDefault matches rota's own default queue concurrency, so "rota on its defaults" and
	// the workload's worker count are the same thing.
	WorkersDefault  = 100
	RateDefault     = 500
	DurationDefault = 10 * time.Second
	// WarmUpDefault is how long the latency workload runs before its measured inserts.
	WarmUpDefault = time.Second
	// SettleDefault bounds the wait for the last jobs of the latency workload to start.
	SettleDefault = 30 * time.Second
)

// Config sizes the workloads. Zero fields take the defaults.
type Config struct {
	// Jobs is how many jobs insert-many, insert-one and drain handle. Defaults to JobsDefault.
	Jobs int
	// Batch is the size of one InsertMany call, for insert-many and for queueing the drain's
	// backlog. Defaults to BatchDefault.
	Batch int
	// Concurrency is how many goroutines insert one by one. Defaults to ConcurrencyDefault.
	Concurrency int
	// Workers is how many jobs run at once in drain and latency. Defaults to WorkersDefault; a
	// Target may override it where its configuration says so (River's benchmark settings).
	Workers int
	// Rate is the latency workload's insert rate in jobs/s. Defaults to RateDefault.
	Rate int
	// Duration is how long the latency workload inserts. Defaults to DurationDefault.
	Duration time.Duration
	// WarmUp is how long the latency workload inserts at Rate before the inserts it measures;
	// it waits for those jobs to start and does not count them. Defaults to WarmUpDefault;
	// negative: none.
	WarmUp time.Duration
	// Settle bounds the wait, after the last insert, for every job to start. Defaults to
	// SettleDefault.
	Settle time.Duration
	// Queued is how many jobs wait on the workload's queue before it starts, due in a day: in the
	// table and its indexes, never claimed. Retained is how many completed jobs the table holds
	// before it starts, as a long retention keeps them. Both are written before the timing
	// starts; see Preloader.
	Queued, Retained int
	// Progress, if set, is told how far the long steps have come.
	Progress Progress
	// Window is the span of one line of a soak's report. Defaults to WindowDefault.
	Window time.Duration
}

// jobsIn is how many jobs the paced workloads insert in d at c.Rate (none for d ≤ 0).
func (c Config) jobsIn(d time.Duration) int {
	return max(int(int64(c.Rate)*int64(d)/int64(time.Second)), 0)
}

// WithDefaults is c with each zero field set to its default: what every workload runs with, and
// what a Target that runs workloads itself (BullMQ's, in bench/peers) passes on.
func (c Config) WithDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Jobs, JobsDefault)
	def(&c.Batch, BatchDefault)
	def(&c.Concurrency, ConcurrencyDefault)
	def(&c.Workers, WorkersDefault)
	def(&c.Rate, RateDefault)
	if c.Duration <= 0 {
		c.Duration = DurationDefault
	}
	if c.Settle <= 0 {
		c.Settle = SettleDefault
	}
	if c.WarmUp == 0 {
		c.WarmUp = WarmUpDefault
	}
	if c.Window <= 0 {
		c.Window = WindowDefault
	}
	return c
}

// Result is what one workload measured on one system.
type Result struct {
	System   string   `json:"system"`
	Workload Workload `json:"workload"`
	// Queued and Retained are the jobs the table held before the workload (Config.Queued,
	// Config.Retained).
	Queued   int `json:"queued,omitempty"`
	Retained int `json:"retained,omitempty"`
	// Workers is the worker count the workload asked for (drain, latency, soak).
	Workers int `json:"workers,omitempty"`
	// Jobs is how many jobs the workload handled (for latency: inserted).
	Jobs int `json:"jobs"`
	// Elapsed is the measured time: all inserts, or from the workers' start to the last
	// completion, or the latency workload's insert phase.
	Elapsed time.Duration `json:"elapsed_ns"`
	// JobsPerSec is Jobs / Elapsed: throughput, or for latency the rate actually achieved.
	JobsPerSec float64 `json:"jobs_per_sec"`
	// CPU is the CPU time the whole machine used during Elapsed (see machineBusy), and CPUPerJob
	// that over Jobs: what a job costs, however the work was spread over processes and cores.
	// Both are zero where the machine does not tell.
	CPU       time.Duration `json:"cpu_ns,omitempty"`
	CPUPerJob time.Duration `json:"cpu_per_job_ns,omitempty"`
	// Latency holds percentiles of what LatencyOf names, when the workload records one.
	Latency   *Percentiles `json:"latency,omitempty"`
	LatencyOf string       `json:"latency_of,omitempty"`
	// Windows is a soak's report, one entry per Config.Window.
	Windows []Window `json:"windows,omitempty"`
	// Err is why the workload did not finish; the other fields are then partial.
	Err string `json:"error,omitempty"`
}

// What the latency percentiles of each workload measure.
const (
	latencyOfBatch  = "one InsertMany call"
	latencyOfInsert = "one Insert call"
	latencyOfSoak   = "the windows' insert→start p99"
	latencyOfStart  = "insert returned → handler started"
)
