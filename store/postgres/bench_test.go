package postgres

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotahq/rota/store"
)

// The benchmarks report jobs/s. Run them one at a time, briefly, e.g.
//
//	go test -run '^$' -bench BenchmarkInsertMany -benchtime 1x ./store/postgres/
//	go test -run '^$' -bench BenchmarkInsertOneConcurrent10 -benchtime 20000x ./store/postgres/
//	go test -run '^$' -bench 'BenchmarkClaimComplete$' -benchtime 50000x ./store/postgres/
//	go test -run '^$' -bench BenchmarkClaimCompleteLimited -benchtime 50000x ./store/postgres/

func benchJobs(n int) []store.InsertParams {
	ps := make([]store.InsertParams, n)
	for i := range ps {
		ps[i] = store.InsertParams{Kind: "k", Queue: "default", Args: []byte(`{"to":"someone@example.com","n":12345}`), MaxAttempts: 25}
	}
	return ps
}

// BenchmarkInsertMany inserts 100,000 jobs per iteration in batches: batches below copyMinRows
// are one multi-row INSERT each, larger ones go through COPY.
func BenchmarkInsertMany(b *testing.B) {
	const perOp = 100_000
	for _, batch := range []int{1000, 10_000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s := open(b)
			ps := benchJobs(batch)
			b.ResetTimer()
			for b.Loop() {
				for range perOp / batch {
					if _, err := s.Insert(b.Context(), ps); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkInsertOneConcurrent10 inserts one job per call from 10 goroutines, on a pool of 10
// connections, with the NOTIFY gate at its default interval, at shorter ones and off: the gate is
// what keeps NOTIFY from serialising the inserts.
func BenchmarkInsertOneConcurrent10(b *testing.B) {
	for _, gate := range []time.Duration{NotifyIntervalDefault, 2 * time.Millisecond, time.Millisecond, 0} {
		b.Run(fmt.Sprintf("notify_interval=%v", gate), func(b *testing.B) {
			cfg, err := pgxpool.ParseConfig(testURL())
			if err != nil {
				b.Fatal(err)
			}
			cfg.MaxConns = 10
			pool, err := pgxpool.NewWithConfig(b.Context(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(pool.Close)
			s, err := New(pool, WithSchema(newSchema(b)), WithLogger(quiet), WithNotifyInterval(gate))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			if err := s.Migrate(b.Context()); err != nil {
				b.Fatal(err)
			}
			ps := benchJobs(1)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range 10 {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if _, err := s.Insert(b.Context(), ps); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkClaimComplete drains a queue from one goroutine: claim a batch of 100, complete the
// batch in one call, repeat.
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
// holds a claim back, MaxRunning 100 and a rate: what a claim under limits costs to lock, count
// and record.
func BenchmarkClaimCompleteLimited(b *testing.B) {
	benchClaimComplete(b, completed, store.Limit{Scope: store.LimitQueue, Name: "default", MaxRunning: 100,
		Rate: 1 << 30, Period: time.Hour})
}

// BenchmarkClaimCompleteFanIn is BenchmarkClaimComplete on the steps of a fan-in: every job is
// waited for by one last job, which each batch of completions counts itself off.
func BenchmarkClaimCompleteFanIn(b *testing.B) {
	s := open(b)
	ps := benchJobs(b.N + claimBatch)
	for i := range ps {
		ps[i].Workflow = "fan"
	}
	steps := mustInsert(b, s, ps...)
	last := job("last")
	last.Workflow = "fan"
	for _, r := range steps {
		last.DependsOn = append(last.DependsOn, r.Job.ID)
	}
	mustInsert(b, s, last)
	runClaimComplete(b, s, completed)
}

func benchClaimComplete(b *testing.B, outcome func(*store.JobRow) store.Outcome, limits ...store.Limit) {
	s := open(b)
	for _, l := range limits {
		if err := s.SetLimit(b.Context(), l); err != nil {
			b.Fatal(err)
		}
	}
	ps := benchJobs(10_000)
	for left := b.N + claimBatch; left > 0; left -= len(ps) {
		if _, err := s.Insert(b.Context(), ps[:min(len(ps), left)]); err != nil {
			b.Fatal(err)
		}
	}
	runClaimComplete(b, s, outcome)
}

// claimBatch is how many jobs runClaimComplete claims and completes at a time.
const claimBatch = 100

// runClaimComplete claims the queue's jobs claimBatch at a time and completes each batch in one
// call, until b.N are done.
func runClaimComplete(b *testing.B, s *Store, outcome func(*store.JobRow) store.Outcome) {
	claim := store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: claimBatch, Owner: "bench", LeaseFor: time.Minute}
	outs := make([]store.Outcome, 0, claimBatch)
	b.ResetTimer()
	for done := 0; done < b.N; {
		jobs, err := s.Claim(b.Context(), claim)
		if err != nil {
			b.Fatal(err)
		}
		outs = outs[:0]
		for _, j := range jobs {
			outs = append(outs, outcome(j))
		}
		if _, err := s.Complete(b.Context(), outs); err != nil {
			b.Fatal(err)
		}
		done += len(jobs)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
