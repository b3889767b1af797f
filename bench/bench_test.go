package bench

import (
	"flag"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/pgtest"
	"github.com/rotahq/rota/internal/redistest"
)

// The size of one benchmark op. One op is one whole workload on a fresh store, so the figures
// are per workload run, as `rota bench` prints them; -benchtime 1x is the natural setting:
//
//	go test ./bench -run '^$' -bench . -benchtime 1x -args -jobs 100000
var (
	flagJobs     = flag.Int("jobs", JobsDefault, "jobs per insert-many, insert-one and drain run")
	flagRate     = flag.Int("rate", RateDefault, "insert rate of the latency workload, jobs/s")
	flagDuration = flag.Duration("duration", DurationDefault, "how long the latency workload inserts")
)

// benchmarks are the sub-benchmarks each store runs, named as the issues name them.
var benchmarks = []struct {
	name     string
	workload Workload
}{
	{"InsertMany", InsertMany},
	{"InsertOne10", InsertOne},
	{"Drain", Drain},
	{"Latency500", Latency},
}

func BenchmarkSQLite(b *testing.B) {
	runBenchmarks(b, Rota("rota-sqlite", SQLite("")))
}

func BenchmarkPostgreSQL(b *testing.B) {
	url := pgtest.URL(b) // fails in CI when no server answers, skips elsewhere
	runBenchmarks(b, Rota("rota-postgres", Postgres(url)))
}

// BenchmarkRedis runs on the test Redis (ROTA_TEST_REDIS_URL or 127.0.0.1:6379), each workload
// in a namespace of its own that is deleted afterwards.
func BenchmarkRedis(b *testing.B) {
	url := redistest.URL(b) // fails in CI when no server answers, skips elsewhere
	runBenchmarks(b, Rota("rota-redis", Redis(url)))
}

func runBenchmarks(b *testing.B, t Target) {
	cfg := Config{Jobs: *flagJobs, Rate: *flagRate, Duration: *flagDuration}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			var (
				jobs    int
				elapsed time.Duration
				last    Result
			)
			for range b.N {
				res, err := Run(b.Context(), t, bm.workload, cfg)
				if err != nil {
					b.Fatal(err)
				}
				jobs += res.Jobs
				elapsed += res.Elapsed
				last = res
			}
			// Per job, not per run: the figure benchstat compares across changes.
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(jobs), "ns/op")
			b.ReportMetric(float64(jobs)/elapsed.Seconds(), "jobs/s")
			if p := last.Latency; p != nil {
				b.ReportMetric(ms(p.P50), "p50-ms")
				b.ReportMetric(ms(p.P99), "p99-ms")
			}
		})
	}
}

func TestFormatCount(t *testing.T) {
	for n, want := range map[int]string{7: "7", 10_000: "10k", 1_500: "1.5k", 1_000_000: "1M", 10_000_000: "10M", 2_500_000: "2.5M", 1_234_567: "1234567"} {
		if got := FormatCount(n); got != want {
			t.Errorf("FormatCount(%d) = %q, want %q", n, got, want)
		}
	}
}

var flagSteps = flag.Int("steps", 10_000, "steps of the fan-out/fan-in workflow (the chain has a tenth)")

// BenchmarkWorkflow runs, on each store, a fan-out/fan-in of -steps steps against a plain drain
// of as many jobs, and a chain of a tenth as many steps:
//
//	go test ./bench -run '^$' -bench Workflow -benchtime 1x
func BenchmarkWorkflow(b *testing.B) {
	stores := map[string]func(b *testing.B) Opener{
		"SQLite":     func(*testing.B) Opener { return SQLite("") },
		"PostgreSQL": func(b *testing.B) Opener { return Postgres(pgtest.URL(b)) },
		"Redis":      func(b *testing.B) Opener { return Redis(redistest.URL(b)) },
	}
	for _, name := range []string{"SQLite", "PostgreSQL", "Redis"} {
		b.Run(name, func(b *testing.B) {
			open := stores[name](b)
			b.Run("FanOutIn", func(b *testing.B) {
				for range b.N {
					res, err := FanOutIn(b.Context(), open, *flagSteps, WorkersDefault)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(res.Insert.Seconds(), "insert-s")
					b.ReportMetric(res.Fan.Seconds(), "fan-s")
					b.ReportMetric(res.Drain.Seconds(), "drain-s")
					b.ReportMetric(res.Ratio(), "fan/drain")
					b.ReportMetric(float64(res.FanCPU.Microseconds())/float64(res.Steps), "fan-cpu-µs/step")
					b.ReportMetric(float64(res.DrainCPU.Microseconds())/float64(res.Steps), "drain-cpu-µs/job")
				}
			})
			b.Run("Chain", func(b *testing.B) {
				for range b.N {
					res, err := Chain(b.Context(), open, *flagSteps/10)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(ms(res.Gap.P50), "gap-p50-ms")
					b.ReportMetric(ms(res.Gap.P99), "gap-p99-ms")
					b.ReportMetric(ms(res.Gap.Max), "gap-max-ms")
				}
			})
		})
	}
}
