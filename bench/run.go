package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// drain measures how fast workers empty a queued backlog. The clock starts before the workers'
// Start, so it includes their first claims, and stops at the completion event of the last job:
// a job counts when the system has recorded it, not when its handler returned.
func drain(ctx context.Context, inst Instance, cfg Config, res *Result) error {
	if err := enqueue(ctx, inst, cfg, cfg.Jobs); err != nil {
		return err
	}
	completed := newCountdown(int64(cfg.Jobs))
	runner, err := inst.Workers(cfg.Workers, Hooks{Started: func(int64) {}, Completed: completed.add})
	if err != nil {
		return err
	}
	watch := startWatch()
	if err := runner.Start(ctx); err != nil {
		return fmt.Errorf("start workers: %w", err)
	}
	following := cfg.progress("drain", cfg.Jobs).follow(func() int { return int(completed.n.Load()) })
	waitErr := completed.wait(ctx, stallTimeout)
	following()
	if waitErr == nil {
		watch.stop(res)
	}
	res.Jobs = int(completed.n.Load())
	if err := stop(runner); waitErr == nil && err != nil {
		return err
	}
	return waitErr
}

// latency inserts jobs one at a time on a fixed schedule, job i at begin + i/Rate, while workers
// run, and records for each job the time from its insert returning to its handler starting. The
// schedule does not wait for slow inserts: a pool of producers keeps it, so a slow store shows as
// latency and not as a lower rate. A handler that starts before its insert returned (the system
// woke its workers before the caller) counts as zero.
// The measured jobs follow a warm-up at the same rate (Config.WarmUp, seqs below zero) whose
// jobs it waits for and does not count: the percentiles are a running system's, not the first
// statements of fresh connections (~25 ms each on PostgreSQL here, which alone made a 10-second
// run's p99).
func latency(ctx context.Context, inst Instance, cfg Config, res *Result) error {
	total, warm := cfg.jobsIn(cfg.Duration), cfg.jobsIn(cfg.WarmUp)
	inserted := make([]atomic.Int64, total) // unix ns when Insert returned
	started := make([]atomic.Int64, total)  // unix ns when the handler began
	warmed := make([]atomic.Bool, warm)     // warm-up job -1-i has started
	count, warmCount := newCountdown(int64(total)), newCountdown(int64(warm))
	runner, err := inst.Workers(cfg.Workers, Hooks{
		Started: func(seq int64) {
			switch {
			case seq >= 0 && seq < int64(total):
				if started[seq].CompareAndSwap(0, time.Now().UnixNano()) {
					count.add()
				}
			case seq < 0 && seq >= -int64(warm):
				if warmed[-1-seq].CompareAndSwap(false, true) {
					warmCount.add()
				}
			}
		},
		Completed: func() {},
	})
	if err != nil {
		return err
	}
	if err := runner.Start(ctx); err != nil {
		return fmt.Errorf("start workers: %w", err)
	}
	defer stop(runner)

	if err := pacedEach(ctx, inst, cfg, -int64(warm), warm, func(int64) {}); err != nil {
		return fmt.Errorf("warm-up insert: %w", err)
	}
	if !warmCount.within(ctx, cfg.Settle) {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fmt.Errorf("%d of %d warm-up jobs had not started %v after the last insert", int64(warm)-warmCount.n.Load(), warm, cfg.Settle)
	}

	watch := startWatch()
	if err := pacedEach(ctx, inst, cfg, 0, total, func(seq int64) { inserted[seq].Store(time.Now().UnixNano()) }); err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	watch.stop(res)
	res.Jobs = total

	count.within(ctx, cfg.Settle)
	lat := make([]time.Duration, 0, total)
	for i := range total {
		if s := started[i].Load(); s != 0 {
			lat = append(lat, time.Duration(max(s-inserted[i].Load(), 0)))
		}
	}
	res.Latency, res.LatencyOf = percentiles(lat), latencyOfStart
	if len(lat) < total {
		return fmt.Errorf("%d of %d jobs had not started %v after the last insert", total-len(lat), total, cfg.Settle)
	}
	return nil
}

// pacedEach inserts jobs first..first+total-1 at cfg.Rate from a pool of producers, calling
// inserted with each job's seq as its insert returns.
func pacedEach(ctx context.Context, inst Instance, cfg Config, first int64, total int, inserted func(seq int64)) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	seqs := make(chan int64)
	// Enough producers that inserts taking 60 ms each still keep 500 jobs/s.
	producers := max(32, cfg.Concurrency)
	var wg sync.WaitGroup
	for range producers {
		wg.Go(func() {
			for seq := range seqs {
				if err := inst.Insert(ctx, seq); err != nil {
					cancel(err)
					return
				}
				inserted(seq)
			}
		})
	}
	begin := time.Now()
	interval := time.Second / time.Duration(cfg.Rate)
	for i := 0; i < total && ctx.Err() == nil; i++ {
		if d := time.Until(begin.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		select {
		case seqs <- first + int64(i):
		case <-ctx.Done():
		}
	}
	close(seqs)
	wg.Wait()
	return context.Cause(ctx)
}

// countdown closes done when add has been called n times.
type countdown struct {
	n      atomic.Int64
	target int64
	done   chan struct{}
}

func newCountdown(target int64) *countdown {
	c := &countdown{target: target, done: make(chan struct{})}
	if target <= 0 {
		close(c.done)
	}
	return c
}

// within waits until the count is reached, d has passed or ctx ends, and says whether the count
// was reached.
func (c *countdown) within(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *countdown) add() {
	if c.n.Add(1) == c.target {
		close(c.done)
	}
}

// stallTimeout is how long a drain may make no progress before it is given up: a system that
// lost a job or a completion event would otherwise hang the benchmark.
const stallTimeout = 30 * time.Second

// wait returns nil once the count is reached, or an error when ctx ends or the count has not
// moved for stall.
func (c *countdown) wait(ctx context.Context, stall time.Duration) error {
	tick := time.NewTicker(stall / 10)
	defer tick.Stop()
	last, since := c.n.Load(), time.Now()
	for {
		select {
		case <-c.done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("%d of %d jobs completed: %w", c.n.Load(), c.target, ctx.Err())
		case <-tick.C:
		}
		if n := c.n.Load(); n != last {
			last, since = n, time.Now()
		} else if time.Since(since) >= stall {
			return fmt.Errorf("%d of %d jobs completed, and none in the last %v", n, c.target, stall)
		}
	}
}

// stopTimeout bounds a runner's graceful stop; no-op jobs finish in microseconds.
const stopTimeout = 30 * time.Second

func stop(r Runner) error {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	return r.Stop(ctx)
}
