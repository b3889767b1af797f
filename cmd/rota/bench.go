package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotahq/rota/bench"
	"github.com/rotahq/rota/internal/storeurl"
	"github.com/rotahq/rota/internal/storeurl/redisurl"
)

// benchCmd measures rota on the kind of store --store names. It never touches that store's data:
// the workloads run in fresh SQLite files beside the named file (same disk, which is what the
// figure is about), in fresh PostgreSQL schemas of the named database, or in fresh namespaces of
// the named Redis (whose keys it deletes one by one: it never flushes a database), removed
// afterwards.
func (a *app) benchCmd() *cobra.Command {
	var (
		workload string
		cfg      bench.Config
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure insert throughput, drain rate and pick-up latency on a store",
		Long: `Measure rota on the kind of store --store names, with rota's defaults and no-op jobs:

  insert-many  --jobs jobs inserted in batches of --batch
  insert-one   --jobs jobs inserted one per call from --concurrency goroutines
  drain        --jobs queued jobs run by --workers workers, from start to the last completion
  latency      one insert at a time at --rate jobs/s for --duration, after a second's warm-up at
               that rate; insert→start percentiles
  soak         latency for --duration (up to 24 h), reported every --window: start latency,
               this process's memory, the store's size; completed jobs are kept one window
  fan-out-in   a workflow of one step, --jobs steps waiting for it and one waiting for them all,
               beside a plain drain of --jobs jobs (not part of all)
  chain        a workflow of --jobs steps each waiting for the one before, on a node that ran a
               short chain first: step-to-step start percentiles (not part of all)

--queued and --retained first fill the store with jobs that wait for tomorrow and with completed
jobs, to show what each workload costs on a big table (a progress bar shows how far it got).

Each workload runs on a fresh store: a new SQLite file in the directory of the --store file,
a new schema in the --store PostgreSQL database, or a new namespace (NAMESPACE-bench-RANDOM)
in the --store Redis. All are removed afterwards; the store's own jobs are never touched, and a
Redis database is never flushed. The machine's other load shows in the figures: compare runs made side
by side, not across days.`,
		Example: `  rota bench
  rota bench --workload drain --jobs 100000
  rota bench --store postgres://localhost/app --workload latency --queued 1000000 --retained 10000000
  rota bench --store postgres://localhost/app --workload soak --rate 2000 --duration 1h
  rota bench --store postgres://localhost/app --workload latency --rate 1000 -o json
  rota bench --store 'redis://127.0.0.1:6379/0?namespace=app' --workload drain --jobs 100000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkBenchConfig(cfg, workload == string(bench.Soak)); err != nil {
				return err
			}
			cfg.Progress = a.benchProgress()
			if workload == "fan-out-in" || workload == "chain" {
				return a.benchWorkflow(cmd.Context(), workload, cfg)
			}
			ws := bench.Workloads
			if workload != "all" {
				w, err := bench.ParseWorkload(workload)
				if err != nil {
					return fmt.Errorf("--workload: %w", err)
				}
				ws = []bench.Workload{w}
			}
			target, err := a.benchTarget()
			if err != nil {
				return err
			}
			// An interrupt ends the workload early but still runs its cleanup, so no file or
			// schema is left behind.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var results []bench.Result
			var failed error
			for _, w := range ws {
				if ctx.Err() != nil {
					break
				}
				fmt.Fprintf(a.stderr, "rota bench: %s on %s ...\n", w, a.storeName())
				res, err := bench.Run(ctx, target, w, cfg)
				results = append(results, res)
				if err != nil {
					failed = err
					fmt.Fprintf(a.stderr, "rota bench: %v\n", err)
				}
			}
			if a.jsonOutput() {
				err = bench.WriteJSON(a.stdout, results)
			} else {
				err = bench.WriteTable(a.stdout, results)
				for _, r := range results {
					if err == nil && len(r.Windows) > 0 {
						fmt.Fprintln(a.stdout)
						err = bench.WriteWindows(a.stdout, r)
					}
				}
			}
			if err != nil {
				return err
			}
			if failed != nil {
				return errSilent
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&workload, "workload", "all", "insert-many, insert-one, drain, latency, all, or soak, fan-out-in, chain (not part of all)")
	f.DurationVar(&cfg.Window, "window", bench.WindowDefault, "soak: the span of one line of the report, and how long completed jobs are kept")
	f.IntVar(&cfg.Jobs, "jobs", bench.JobsDefault, "jobs per insert-many, insert-one and drain run")
	f.IntVar(&cfg.Batch, "batch", bench.BatchDefault, "jobs per InsertMany call")
	f.IntVar(&cfg.Concurrency, "concurrency", bench.ConcurrencyDefault, "goroutines inserting one by one")
	f.IntVar(&cfg.Workers, "workers", bench.WorkersDefault, "jobs run at once in drain and latency")
	f.IntVar(&cfg.Rate, "rate", bench.RateDefault, "latency: inserts per second")
	f.DurationVar(&cfg.Duration, "duration", bench.DurationDefault, "latency: how long to insert")
	f.IntVar(&cfg.Queued, "queued", 0, "before each workload, queue this many jobs due in a day on its queue: they wait in the table, never run")
	f.IntVar(&cfg.Retained, "retained", 0, "before each workload, put this many completed jobs in the table, as a long retention keeps them (SQLite and PostgreSQL)")
	return cmd
}

// benchTarget is rota on fresh stores of the kind --store names.
func (a *app) benchTarget() (bench.Target, error) {
	name, open, err := a.benchOpener()
	if err != nil {
		return nil, err
	}
	return bench.Rota(name, open), nil
}

// benchOpener opens fresh stores of the kind --store names.
func (a *app) benchOpener() (string, bench.Opener, error) {
	loc, err := storeurl.Parse(a.storeURL)
	if err != nil {
		return "", nil, err
	}
	switch loc.Kind {
	case storeurl.SQLite:
		return "rota-sqlite", bench.SQLite(filepath.Dir(loc.Path)), nil
	case storeurl.Postgres:
		return "rota-postgres", bench.Postgres(loc.URL), nil
	case redisurl.Kind:
		return "rota-redis", bench.Redis(loc.URL), nil
	}
	return "", nil, fmt.Errorf("rota bench: cannot benchmark a %s store", loc.Kind)
}

// benchWorkflow runs one of the workflow workloads and prints its figures.
func (a *app) benchWorkflow(ctx context.Context, workload string, cfg bench.Config) error {
	_, open, err := a.benchOpener()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(a.stderr, "rota bench: %s of %d on %s ...\n", workload, cfg.Jobs, a.storeName())
	var res any
	var line string
	if workload == "chain" {
		r, err := bench.Chain(ctx, open, cfg.Jobs)
		if err != nil {
			return err
		}
		res = r
		line = fmt.Sprintf("chain of %d steps: %.2f s; step to step p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
			r.Steps, r.Elapsed.Seconds(), msOf(r.Gap.P50), msOf(r.Gap.P99), msOf(r.Gap.Max))
	} else {
		workers := cfg.Workers
		if workers == 0 {
			workers = bench.WorkersDefault
		}
		r, err := bench.FanOutIn(ctx, open, cfg.Jobs, workers)
		if err != nil {
			return err
		}
		res = r
		line = fmt.Sprintf("fan-out/fan-in of %d steps: inserted in %.2f s, ran in %.2f s; drain of %d jobs: %.2f s; %.2f× the drain\n",
			r.Steps, r.Insert.Seconds(), r.Fan.Seconds(), r.Steps, r.Drain.Seconds(), r.Ratio())
	}
	if a.jsonOutput() {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	_, err = fmt.Fprint(a.stdout, line)
	return err
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchDurationMax keeps a mistyped --duration from inserting for hours; a soak is meant to.
const (
	benchDurationMax = 10 * time.Minute
	soakDurationMax  = 24 * time.Hour
)

// checkBenchConfig refuses values the workloads would otherwise quietly replace by defaults.
func checkBenchConfig(c bench.Config, soak bool) error {
	for name, v := range map[string]int{"--jobs": c.Jobs, "--batch": c.Batch, "--concurrency": c.Concurrency, "--workers": c.Workers, "--rate": c.Rate} {
		if v <= 0 {
			return fmt.Errorf("%s %d: must be at least 1", name, v)
		}
	}
	if c.Queued < 0 || c.Retained < 0 {
		return fmt.Errorf("--queued %d, --retained %d: must not be negative", c.Queued, c.Retained)
	}
	if soak && c.Window <= 0 {
		return fmt.Errorf("--window %v: must be above 0", c.Window)
	}
	limit := benchDurationMax
	if soak {
		limit = soakDurationMax
	}
	if c.Duration <= 0 || c.Duration > limit {
		return fmt.Errorf("--duration %v: must be above 0 and at most %v", c.Duration, limit)
	}
	if int64(c.Rate)*int64(c.Duration/time.Millisecond) < 1000 {
		return fmt.Errorf("--rate %d for --duration %v inserts no job", c.Rate, c.Duration)
	}
	return nil
}
