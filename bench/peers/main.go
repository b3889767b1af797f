// Command peers runs rota's benchmark workloads against rota and its peers, River, Asynq and
// BullMQ, in one process run, and prints one table with rota's ratio to each peer. It is a module
// of its own so that River and Asynq never become dependencies of rota; BullMQ, a Node.js
// library, runs as a child process (bullmq/, installed with `npm ci`, needed at run time only):
//
//	cd bench/peers && go run . [-postgres URL] [-rota-redis URL] [-redis ADDR -redis-db N -bullmq-db N] [-systems LIST]
//
// Every workload runs on an empty system: a new SQLite file, a new PostgreSQL schema (dropped
// afterwards), a new rota namespace or BullMQ key prefix (its keys deleted afterwards), or for
// Asynq a flushed Redis database that only this benchmark uses. Systems run one after another,
// never at once, so they do not compete for the machine's cores.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotahq/rota/bench"
)

// benchArgs is the no-op job of River and Asynq, the same shape as rota's bench.Args.
type benchArgs struct {
	Seq int64 `json:"seq"`
}

func (benchArgs) Kind() string { return "bench" }

// quietLogger keeps River's and rota's informational lines out of the table.
var quietLogger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

// eventBuffer sizes the completion subscriptions, as River's benchmark does, so that no event is
// dropped (a dropped completion would stall the drain).
const eventBuffer = 200_000

func main() {
	var (
		pgURL     = flag.String("postgres", envOr("ROTA_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL URL (a new schema per workload, dropped after)")
		rotaRedis = flag.String("rota-redis", envOr("ROTA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"), "Redis URL for rota (a new namespace per workload, its keys deleted after; the database is never flushed)")
		redisAddr = flag.String("redis", "127.0.0.1:6379", "Redis address for Asynq and BullMQ")
		redisDB   = flag.Int("redis-db", 5, "Redis database for Asynq; flushed, so it must be one only this benchmark uses")
		bullmqDB  = flag.Int("bullmq-db", 6, "Redis database for BullMQ (a new key prefix per workload, its keys deleted after; never flushed)")
		bullmqDir = flag.String("bullmq-dir", "bullmq", "directory of BullMQ's bench.mjs and its node_modules")
		systems   = flag.String("systems", strings.Join(systemNames, ","), "comma-separated systems to run")
		workloads = flag.String("workloads", "insert-many,insert-one,drain,latency", "comma-separated workloads")
		many      = flag.Int("insert-many", 100_000, "jobs in the insert-many workload (batches of -batch)")
		one       = flag.Int("insert-one", 20_000, "jobs in the insert-one workload")
		drain     = flag.Int("drain", 100_000, "jobs in the drain workload")
		queued    = flag.Int("queued", 0, "before each workload, queue this many jobs due in a day on its queue")
		retained  = flag.Int("retained", 0, "before each workload, put this many completed jobs in the table (PostgreSQL and rota's SQLite)")
		batch     = flag.Int("batch", 1_000, "jobs per batch insert")
		conc      = flag.Int("concurrency", 10, "goroutines inserting one by one")
		workers   = flag.Int("workers", 100, "workers for drain and latency (River's benchmark settings use 2,000)")
		rate      = flag.Int("rate", 500, "latency workload: inserts per second")
		duration  = flag.Duration("duration", 10*time.Second, "latency workload: how long to insert")
		sqliteDir = flag.String("sqlite-dir", "", "directory for the SQLite files (default: the temporary directory)")
		jsonOut   = flag.Bool("json", false, "print the results as JSON instead of tables")
		plotDir   = flag.String("plot", "", "write SVG plots of the results into this directory: drain-workers.svg (with -sweep), start-latency.svg (latency)")
		sweep     = flag.String("sweep", "", "comma-separated worker counts: run the drain once per count (River's benchmark settings then use the count too)")
		rounds    = flag.Int("rounds", 1, "run everything this many times, in turn, and end with each figure's median and each ratio's median and range over the rounds")
	)
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	ws, err := parseWorkloads(*workloads)
	if err != nil {
		fatal(err)
	}
	targets := allTargets(stores{sqliteDir: *sqliteDir, pgURL: *pgURL, rotaRedis: *rotaRedis, redisAddr: *redisAddr, redisDB: *redisDB, bullmqDB: *bullmqDB, bullmqDir: *bullmqDir})
	var run []target
	for _, name := range strings.Split(*systems, ",") {
		t, ok := targets[strings.TrimSpace(name)]
		if !ok {
			fatal(fmt.Errorf("unknown system %q: want some of %s", name, strings.Join(append(systemNames, extraSystems...), ",")))
		}
		run = append(run, t)
	}
	counts := []int{*workers}
	if *sweep != "" {
		var err error
		if counts, err = parseCounts(*sweep); err != nil {
			fatal(fmt.Errorf("-sweep: %w", err))
		}
		riverSweep = true
	}
	if *rounds < 1 {
		fatal(fmt.Errorf("-rounds %d: want at least 1", *rounds))
	}
	var results []bench.Result
	var byRound [][]bench.Result
	for round := range *rounds {
		if ctx.Err() != nil {
			break
		}
		if *rounds > 1 {
			fmt.Fprintf(os.Stderr, "%s round %d of %d\n", time.Now().Format("15:04:05"), round+1, *rounds)
		}
		first := len(results)
		results = runRound(ctx, ws, run, *workers, counts, results, func(w bench.Workload, n int) bench.Config {
			cfg := bench.Config{Batch: *batch, Concurrency: *conc, Workers: n, Rate: *rate, Duration: *duration,
				Queued: *queued, Retained: *retained}
			cfg.Jobs = map[bench.Workload]int{bench.InsertMany: *many, bench.InsertOne: *one, bench.Drain: *drain}[w]
			return cfg
		})
		byRound = append(byRound, results[first:])
	}
	if *plotDir != "" {
		written, err := writePlots(*plotDir, results)
		for _, name := range written {
			fmt.Fprintln(os.Stderr, "wrote", name)
		}
		if err != nil {
			fatal(fmt.Errorf("plot: %w", err))
		}
	}
	fmt.Fprintf(os.Stderr, "%s done                             load %s\n", time.Now().Format("15:04:05"), loadAvg())
	if *jsonOut {
		if err := bench.WriteJSON(os.Stdout, results); err != nil {
			fatal(err)
		}
		return
	}
	for i, rr := range byRound {
		if len(byRound) > 1 {
			fmt.Printf("\nround %d of %d\n", i+1, len(byRound))
		}
		fmt.Println()
		if err := bench.WriteTable(os.Stdout, rr); err != nil {
			fatal(err)
		}
		fmt.Println()
		if err := writeComparison(os.Stdout, rr); err != nil {
			fatal(err)
		}
	}
	if len(byRound) > 1 {
		fmt.Printf("\nmedians over %d rounds\n\n", len(byRound))
		if err := writeMedians(os.Stdout, byRound); err != nil {
			fatal(err)
		}
	}
}

// runRound runs every workload on every system once, appending the results to results.
// Workload by workload, every system in turn: the figures compared with each other are measured
// minutes apart at most, so a change in the machine's other load (it is shared) skews a ratio
// less than if each system ran all its workloads at once.
func runRound(ctx context.Context, ws []bench.Workload, run []target, workers int, counts []int, results []bench.Result, config func(bench.Workload, int) bench.Config) []bench.Result {
	for _, w := range ws {
		for _, t := range run {
			if t.workOnly && (w == bench.InsertMany || w == bench.InsertOne) || t.noBatch && w == bench.InsertMany ||
				t.drainOnly && w != bench.Drain {
				continue
			}
			runs := []int{workers}
			if w == bench.Drain {
				runs = counts
			}
			for _, n := range runs {
				if ctx.Err() != nil {
					break
				}
				cfg := config(w, n)
				fmt.Fprintf(os.Stderr, "%s %-20s %-11s workers %-5d load %s\n", time.Now().Format("15:04:05"), t.Name(), w, n, loadAvg())
				var res bench.Result
				var err error
				if wr, ok := t.Target.(workloadRunner); ok {
					res, err = wr.RunWorkload(ctx, w, cfg)
				} else {
					res, err = bench.Run(ctx, t, w, cfg)
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, "  ", err)
				}
				if res.Workers == 0 && (w == bench.Drain || w == bench.Latency) {
					res.Workers = n // BullMQ's runner reports no worker count of its own
				}
				results = append(results, res)
			}
		}
	}
	return results
}

// target is a bench.Target with what the comparison needs to know about it.
type target struct {
	bench.Target
	// baselines are the rota systems it is compared with, the first of them that ran the same
	// workload: Asynq and BullMQ are compared with rota on Redis when it ran, else on PostgreSQL.
	baselines []string
	// workOnly marks a configuration that differs from another only in how it works jobs, so
	// its insert workloads would repeat that one's.
	workOnly bool
	// noBatch marks a system without batch inserts, which skips insert-many.
	noBatch bool
	// drainOnly marks a measure of a limit rather than a job system (sqlite-bare): it runs the
	// drain only.
	drainOnly bool
}

var systemNames = []string{
	"rota-sqlite", "sqlite-bare", "river-sqlite", "river-sqlite-bench",
	"rota-postgres", "river-postgres", "river-postgres-bench",
	"rota-redis", "asynq-redis", "bullmq-redis",
}

// extraSystems run only when -systems names them: the -apart systems are rota with the inserting
// client on a store of its own, as a producer in another process, for the latency workload (their
// other figures are those of the system without -apart).
var extraSystems = []string{"rota-sqlite-apart", "rota-postgres-apart", "rota-redis-apart"}

// stores is where the targets keep their data.
type stores struct {
	sqliteDir, pgURL, rotaRedis, redisAddr string
	redisDB, bullmqDB                      int
	bullmqDir                              string
}

func allTargets(s stores) map[string]target {
	sqliteDir, pgURL := s.sqliteDir, s.pgURL
	viaRedis := []string{"rota-redis", "rota-postgres"}
	return map[string]target{
		"rota-sqlite":          {Target: bench.Rota("rota-sqlite", bench.SQLite(sqliteDir))},
		"sqlite-bare":          {Target: bench.SQLiteBare(sqliteDir), baselines: []string{"rota-sqlite"}, drainOnly: true},
		"river-sqlite":         {Target: &riverTarget[*sql.Tx]{name: "river-sqlite", open: riverSQLite(sqliteDir)}, baselines: []string{"rota-sqlite"}},
		"river-sqlite-bench":   {Target: &riverTarget[*sql.Tx]{name: "river-sqlite-bench", open: riverSQLite(sqliteDir), benchmark: true}, baselines: []string{"rota-sqlite"}, workOnly: true},
		"rota-postgres":        {Target: bench.Rota("rota-postgres", bench.Postgres(pgURL))},
		"rota-postgres-apart":  {Target: bench.RotaApart("rota-postgres-apart", bench.PostgresApart(pgURL))},
		"rota-sqlite-apart":    {Target: bench.RotaApart("rota-sqlite-apart", bench.SQLiteApart(sqliteDir))},
		"river-postgres":       {Target: &riverTarget[pgx.Tx]{name: "river-postgres", open: riverPostgres(pgURL)}, baselines: []string{"rota-postgres"}},
		"river-postgres-bench": {Target: &riverTarget[pgx.Tx]{name: "river-postgres-bench", open: riverPostgres(pgURL), benchmark: true}, baselines: []string{"rota-postgres"}, workOnly: true},
		"rota-redis":           {Target: bench.Rota("rota-redis", bench.Redis(s.rotaRedis))},
		"rota-redis-apart":     {Target: bench.RotaApart("rota-redis-apart", rotaRedisApart(s.rotaRedis))},
		"asynq-redis":          {Target: &asynqTarget{addr: s.redisAddr, db: s.redisDB}, baselines: viaRedis, noBatch: true},
		"bullmq-redis":         {Target: &bullmqTarget{addr: s.redisAddr, db: s.bullmqDB, dir: s.bullmqDir}, baselines: viaRedis},
	}
}

func parseWorkloads(s string) ([]bench.Workload, error) {
	var ws []bench.Workload
	for _, name := range strings.Split(s, ",") {
		w, err := bench.ParseWorkload(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		if !slices.Contains(ws, w) {
			ws = append(ws, w)
		}
	}
	return ws, nil
}

// loadAvg is the machine's 1, 5 and 15 minute load averages, logged with each step: on a shared
// machine they say how much the figures can be trusted.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "peers:", err)
	os.Exit(1)
}

// parseCounts reads a comma-separated list of positive counts.
func parseCounts(s string) ([]int, error) {
	var counts []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive count", f)
		}
		counts = append(counts, n)
	}
	return counts, nil
}
