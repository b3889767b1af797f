package sqlite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

// The benchmarks measure jobs per second on a file store with the default settings
// (synchronous=NORMAL), or with ROTA_BENCH_SYNC=FULL. Run them with a fixed count, so that every
// run does the same work:
//
//	go test ./store/sqlite -run '^$' -bench . -benchtime 20000x
//	ROTA_BENCH_SYNC=FULL go test ./store/sqlite -run '^$' -bench . -benchtime 20000x

func benchStore(b *testing.B) *sqlite.Store {
	var opts []sqlite.Option
	switch os.Getenv("ROTA_BENCH_SYNC") {
	case "":
	case "NORMAL":
		opts = append(opts, sqlite.WithSynchronous(sqlite.SynchronousNormal))
	case "FULL":
		opts = append(opts, sqlite.WithSynchronous(sqlite.SynchronousFull))
	default:
		b.Fatalf("ROTA_BENCH_SYNC must be FULL or NORMAL")
	}
	return open(b, filepath.Join(b.TempDir(), "bench.db"), opts...)
}

func reportJobs(b *testing.B, jobs int, d time.Duration) {
	b.ReportMetric(float64(jobs)/d.Seconds(), "jobs/s")
}

func benchJob(i int) store.InsertParams {
	p := job()
	p.Args = fmt.Appendf(nil, `{"i":%d,"email":"user%d@example.com"}`, i, i)
	return p
}

// BenchmarkInsertMany inserts b.N jobs in calls of 1,000.
func BenchmarkInsertMany(b *testing.B) {
	s := benchStore(b)
	const batch = 1000
	ps := make([]store.InsertParams, batch)
	for i := range ps {
		ps[i] = benchJob(i)
	}
	start := time.Now()
	for done := 0; done < b.N; done += batch {
		if _, err := s.Insert(b.Context(), ps[:min(batch, b.N-done)]); err != nil {
			b.Fatal(err)
		}
	}
	reportJobs(b, b.N, time.Since(start))
}

// BenchmarkInsertOneConcurrent10 inserts b.N jobs one per call from 10 goroutines: a service
// enqueueing from its request handlers.
func BenchmarkInsertOneConcurrent10(b *testing.B) {
	s := benchStore(b)
	const callers = 10
	start := time.Now()
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := c; i < b.N; i += callers {
				if _, err := s.Insert(b.Context(), []store.InsertParams{benchJob(i)}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	reportJobs(b, b.N, time.Since(start))
}

// BenchmarkClaimComplete drains b.N waiting jobs the way a node does: claim up to 100, record
// their outcomes in one call, repeat.
func BenchmarkClaimComplete(b *testing.B) { benchClaimComplete(b, completed) }

// BenchmarkClaimFail is BenchmarkClaimComplete with every attempt failing: its error appended to
// the job's with the attempt's node and duration, the job retryable in an hour.
func BenchmarkClaimFail(b *testing.B) { benchClaimComplete(b, failed) }

func completed(j *store.JobRow) store.Outcome {
	return store.Outcome{ID: j.ID, Fence: j.Fence, State: store.StateCompleted}
}

func failed(j *store.JobRow) store.Outcome {
	now := time.Now()
	return store.Outcome{ID: j.ID, Fence: j.Fence, State: store.StateRetryable, RunAt: now.Add(time.Hour),
		Error: &store.AttemptError{Attempt: j.Attempt, At: now, Error: "smtp: 451 4.7.1 try again later"}}
}

// BenchmarkClaimCompleteLimited is BenchmarkClaimComplete on a queue with a limit that never
// holds a claim back, MaxRunning 100 and a rate: what a claim under limits costs to count and
// record.
func BenchmarkClaimCompleteLimited(b *testing.B) {
	benchClaimComplete(b, completed, store.Limit{Scope: store.LimitQueue, Name: "default", MaxRunning: 100,
		Rate: 1 << 30, Period: time.Hour})
}

func benchClaimComplete(b *testing.B, outcome func(*store.JobRow) store.Outcome, limits ...store.Limit) {
	s := benchStore(b)
	for _, l := range limits {
		if err := s.SetLimit(b.Context(), l); err != nil {
			b.Fatal(err)
		}
	}
	ps := make([]store.InsertParams, b.N)
	for i := range ps {
		ps[i] = benchJob(i)
	}
	for len(ps) > 0 {
		n := min(len(ps), 10000)
		if _, err := s.Insert(b.Context(), ps[:n]); err != nil {
			b.Fatal(err)
		}
		ps = ps[n:]
	}
	b.ResetTimer()
	start := time.Now()
	if done := drainKind(b, s, "k", outcome); done != b.N {
		b.Fatalf("drained %d jobs, want %d", done, b.N)
	}
	reportJobs(b, b.N, time.Since(start))
}

// drainKind claims jobs of kind in calls of 100 and records their outcomes, until none is left;
// it returns how many it ran.
func drainKind(b *testing.B, s *sqlite.Store, kind string, outcome func(*store.JobRow) store.Outcome) int {
	claim := store.ClaimParams{Queue: "default", Kinds: []string{kind}, Max: 100, Owner: "bench", LeaseFor: time.Minute}
	outs := make([]store.Outcome, 0, 100)
	done := 0
	for {
		rows, err := s.Claim(b.Context(), claim)
		if err != nil {
			b.Fatal(err)
		}
		if len(rows) == 0 {
			return done
		}
		outs = outs[:0]
		for _, r := range rows {
			outs = append(outs, outcome(r))
		}
		if _, err := s.Complete(b.Context(), outs); err != nil {
			b.Fatal(err)
		}
		done += len(rows)
	}
}

// fanOut is a workflow of kind "step": a root, n steps waiting for it and, with final, a last
// step waiting for them all.
func fanOut(n int, final bool) []store.InsertParams {
	steps := make([]store.InsertParams, n+1, n+2)
	steps[0] = benchJob(0)
	steps[0].Kind = "step"
	all := make([]int, n)
	for i := range n {
		steps[i+1] = benchJob(i + 1)
		steps[i+1].Kind, steps[i+1].Workflow, steps[i+1].DependsOnIndex = "step", "fan", []int{0}
		all[i] = i + 1
	}
	if final {
		last := benchJob(n + 1)
		last.Kind, last.Workflow, last.DependsOnIndex = "step", "fan", all
		steps = append(steps, last)
	}
	return steps
}

// BenchmarkFanOutIn drains, on one store, b.N plain jobs and then a workflow of b.N steps
// waiting for one root and one final step waiting for them all, both in calls of 100 with no
// runtime around them: what a step costs the store (its release, its edges) against a plain
// job, apart from the node's work, which the bench package's Workflow benchmark adds.
//
//	go test ./store/sqlite -run '^$' -bench FanOutIn -benchtime 10000x -count 5
func BenchmarkFanOutIn(b *testing.B) {
	s := benchStore(b)
	plain := make([]store.InsertParams, b.N)
	for i := range plain {
		plain[i] = benchJob(i)
	}
	for _, ps := range [][]store.InsertParams{plain, fanOut(b.N, true)} {
		if _, err := s.Insert(b.Context(), ps); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	if n := drainKind(b, s, "k", completed); n != b.N {
		b.Fatalf("drained %d plain jobs, want %d", n, b.N)
	}
	plainTime := time.Since(start)
	start = time.Now()
	if n := drainKind(b, s, "step", completed); n != b.N+2 {
		b.Fatalf("ran %d steps, want %d", n, b.N+2)
	}
	stepTime := time.Since(start)
	b.ReportMetric(0, "ns/op") // both drains in one op: the metrics below say what each cost
	b.ReportMetric(float64(plainTime.Nanoseconds())/1e3/float64(b.N), "µs/job")
	b.ReportMetric(float64(stepTime.Nanoseconds())/1e3/float64(b.N+2), "µs/step")
	b.ReportMetric(float64(stepTime)/float64(plainTime), "steps/jobs")
}

// BenchmarkInsertDuringRelease completes a root that b.N steps wait for while another
// goroutine inserts one job per call, and reports the slowest of those inserts: how long the
// release holds other writes back (the settle batch bounds each of its transactions).
//
//	go test ./store/sqlite -run '^$' -bench InsertDuringRelease -benchtime 10000x -count 3
func BenchmarkInsertDuringRelease(b *testing.B) {
	s := benchStore(b)
	if _, err := s.Insert(b.Context(), fanOut(b.N, false)); err != nil {
		b.Fatal(err)
	}
	root, err := s.Claim(b.Context(), store.ClaimParams{Queue: "default", Kinds: []string{"step"}, Max: 1, Owner: "bench", LeaseFor: time.Minute})
	if err != nil || len(root) != 1 {
		b.Fatalf("claim of the root: %v, %v", root, err)
	}
	stop, inserted := make(chan struct{}), make(chan time.Duration)
	go func() {
		var slowest time.Duration
		defer func() { inserted <- slowest }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			if _, err := s.Insert(b.Context(), []store.InsertParams{benchJob(0)}); err != nil {
				b.Error(err)
				return
			}
			slowest = max(slowest, time.Since(start))
		}
	}()
	b.ResetTimer()
	start := time.Now()
	if _, err := s.Complete(b.Context(), []store.Outcome{completed(root[0])}); err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	close(stop)
	slowest := <-inserted
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(took.Microseconds())/1e3, "release-ms")
	b.ReportMetric(float64(slowest.Microseconds())/1e3, "slowest-insert-ms")
}
