package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Run runs one workload on a fresh instance of t. It always returns a Result; one that failed
// carries the error in Err as well as in the returned error.
func Run(ctx context.Context, t Target, w Workload, cfg Config) (Result, error) {
	cfg = cfg.WithDefaults()
	res := Result{System: t.Name(), Workload: w, Queued: cfg.Queued, Retained: cfg.Retained}
	if w == Drain || w == Latency || w == Soak {
		res.Workers = cfg.Workers
	}
	inst, err := t.Open(ctx)
	if err != nil {
		return failed(res, fmt.Errorf("open %s: %w", t.Name(), err))
	}
	if err := preload(ctx, inst, cfg); err != nil {
		return failed(res, errors.Join(err, inst.Close()))
	}
	switch w {
	case InsertMany:
		err = insertMany(ctx, inst, cfg, &res)
	case InsertOne:
		err = insertOne(ctx, inst, cfg, &res)
	case Drain:
		err = drain(ctx, inst, cfg, &res)
	case Latency:
		err = latency(ctx, inst, cfg, &res)
	case Soak:
		err = soak(ctx, inst, cfg, &res)
	default:
		err = fmt.Errorf("unknown workload %q", w)
	}
	if cerr := inst.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", t.Name(), cerr)
	}
	if err != nil {
		return failed(res, err)
	}
	if res.Elapsed > 0 {
		res.JobsPerSec = float64(res.Jobs) / res.Elapsed.Seconds()
	}
	if res.Jobs > 0 {
		res.CPUPerJob = res.CPU / time.Duration(res.Jobs)
	}
	return res, nil
}

func failed(res Result, err error) (Result, error) {
	res.Err = err.Error()
	return res, fmt.Errorf("%s %s: %w", res.System, res.Workload, err)
}

// RunAll runs each workload in turn on t and returns every result, failed ones included; the
// error joins the failures.
func RunAll(ctx context.Context, t Target, ws []Workload, cfg Config) ([]Result, error) {
	var (
		results []Result
		errs    []error
	)
	for _, w := range ws {
		res, err := Run(ctx, t, w, cfg)
		results = append(results, res)
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return results, errors.Join(errs...)
}

func insertMany(ctx context.Context, inst Instance, cfg Config, res *Result) error {
	calls := make([]time.Duration, 0, cfg.Jobs/cfg.Batch+1)
	seqs := make([]int64, 0, cfg.Batch)
	watch := startWatch()
	for done := 0; done < cfg.Jobs; done += len(seqs) {
		seqs = seqs[:0]
		for i := done; i < min(done+cfg.Batch, cfg.Jobs); i++ {
			seqs = append(seqs, int64(i))
		}
		t0 := time.Now()
		if err := inst.InsertBatch(ctx, seqs); err != nil {
			return err
		}
		calls = append(calls, time.Since(t0))
		res.Jobs += len(seqs)
	}
	watch.stop(res)
	res.Latency, res.LatencyOf = percentiles(calls), latencyOfBatch
	return nil
}

func insertOne(ctx context.Context, inst Instance, cfg Config, res *Result) error {
	calls := make([]time.Duration, cfg.Jobs)
	watch := startWatch()
	err := parallel(ctx, cfg.Concurrency, cfg.Jobs, func(ctx context.Context, seq int64) error {
		t0 := time.Now()
		err := inst.Insert(ctx, seq)
		calls[seq] = time.Since(t0)
		return err
	})
	watch.stop(res)
	if err != nil {
		return err
	}
	res.Jobs = cfg.Jobs
	res.Latency, res.LatencyOf = percentiles(calls), latencyOfInsert
	return nil
}

// parallel calls f for seq 0..n-1 from workers goroutines and returns the first error, after
// which no new call starts.
func parallel(ctx context.Context, workers, n int, f func(ctx context.Context, seq int64) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				seq := next.Add(1) - 1
				if seq >= int64(n) {
					return
				}
				if err := f(ctx, seq); err != nil {
					cancel(err)
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// enqueue fills the system with n jobs before a measurement, in batches where it has them.
func enqueue(ctx context.Context, inst Instance, cfg Config, n int) error {
	report := cfg.progress("queue", n)
	defer report.finish()
	seqs := make([]int64, 0, cfg.Batch)
	for done := 0; done < n; done += len(seqs) {
		report.set(done)
		seqs = seqs[:0]
		for i := done; i < min(done+cfg.Batch, n); i++ {
			seqs = append(seqs, int64(i))
		}
		err := inst.InsertBatch(ctx, seqs)
		if errors.Is(err, ErrNoBatch) {
			return parallel(ctx, cfg.Concurrency, n, inst.Insert)
		}
		if err != nil {
			return fmt.Errorf("queue the backlog: %w", err)
		}
	}
	return nil
}
