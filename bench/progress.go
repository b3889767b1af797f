package bench

import (
	"sync"
	"time"
)

// Progress is told how far a long step of a workload has come: the preload, the queueing of a
// drain's backlog, the drain itself. It is called at most every progressEvery per step, and once
// more with done == total when the step ends (total 0: the step has no known end, as a run of
// fixed duration counted in jobs).
type Progress func(step string, done, total int)

// progressEvery spaces the reports of one step.
const progressEvery = 200 * time.Millisecond

// reporter reports one step's progress to a Progress, rate-limited.
type reporter struct {
	report      Progress
	step        string
	total       int
	mu          sync.Mutex
	last        time.Time
	done        int
	finishedOne sync.Once
}

// progress returns the reporter of a step; with no Progress set it reports to no one.
func (c Config) progress(step string, total int) *reporter {
	return &reporter{report: c.Progress, step: step, total: total}
}

// set records that done units are done and reports it unless a report was made just before.
func (r *reporter) set(done int) {
	if r == nil || r.report == nil {
		return
	}
	r.mu.Lock()
	r.done = done
	now := time.Now()
	due := now.Sub(r.last) >= progressEvery
	if due {
		r.last = now
	}
	r.mu.Unlock()
	if due {
		r.report(r.step, done, r.total)
	}
}

// finish reports the step's end once.
func (r *reporter) finish() {
	if r == nil || r.report == nil {
		return
	}
	r.finishedOne.Do(func() {
		r.mu.Lock()
		done := r.done
		r.mu.Unlock()
		if r.total > 0 {
			done = r.total
		}
		r.report(r.step, done, r.total)
	})
}

// follow reports count() every progressEvery until the returned stop is called.
func (r *reporter) follow(count func() int) (stop func()) {
	if r == nil || r.report == nil {
		return func() {}
	}
	quit, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				r.set(count())
			}
		}
	}()
	return func() {
		close(quit)
		<-exited
		r.set(count())
		r.finish()
	}
}
