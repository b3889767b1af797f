package completer

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

// lostAnswer is a store whose first Complete fails as a dropped connection does, after before
// ran: commit, when before writes the outcomes, or anything else that happens to the jobs
// meanwhile.
type lostAnswer struct {
	store.Store
	calls  atomic.Int32
	before func(ctx context.Context, outcomes []store.Outcome)
}

func (l *lostAnswer) Complete(ctx context.Context, outcomes []store.Outcome) ([]bool, error) {
	if l.calls.Add(1) == 1 {
		l.before(ctx, outcomes)
		return nil, fmt.Errorf("%w: read tcp: connection reset by peer", store.ErrUnavailable)
	}
	return l.Store.Complete(ctx, outcomes)
}

// settled adds outcomes to c and returns, by job id, whether each was reported applied.
func settled(t *testing.T, c *Completer, clock *clockwork.FakeClock, outcomes ...store.Outcome) map[int64]bool {
	t.Helper()
	type result struct {
		id      int64
		applied bool
	}
	results := make(chan result, len(outcomes))
	for _, o := range outcomes {
		c.Add(o, func(ok bool) { results <- result{o.ID, ok} })
	}
	runWithoutWaits(t, c, clock)
	out := make(map[int64]bool)
	for range outcomes {
		select {
		case r := <-results:
			out[r.id] = r.applied
		case <-time.After(10 * time.Second):
			t.Fatal("outcomes not settled within 10s")
		}
	}
	return out
}

// completedAndFailed are outcomes for two running jobs: the first completed, the second failed
// with text and to be retried.
func completedAndFailed(jobs []*store.JobRow, clock clockwork.Clock, text string) []store.Outcome {
	done, failed := jobs[0], jobs[1]
	return []store.Outcome{
		{ID: done.ID, Fence: done.Fence, State: store.StateCompleted},
		{ID: failed.ID, Fence: failed.Fence, State: store.StateRetryable, RunAt: clock.Now(),
			Error: &store.AttemptError{Attempt: 1, At: clock.Now(), Error: text}},
	}
}

// A write that committed before its answer was lost is retried, and the retry finds the jobs
// no longer running under the outcomes' fences: the outcomes were applied, by the lost write,
// and are reported so, not as refused.
func TestOutcomeWrittenBeforeTheAnswerWasLostIsApplied(t *testing.T) {
	ctx := context.Background()
	st, jobs := running(t, filepath.Join(t.TempDir(), "rota.db"), 2)
	clock := clockwork.NewFakeClock()
	lost := &lostAnswer{Store: st, before: func(ctx context.Context, outcomes []store.Outcome) {
		if _, err := st.Complete(ctx, outcomes); err != nil {
			t.Errorf("the write whose answer is lost: %v", err)
		}
	}}
	c := New(lost, clock, logged(t))
	got := settled(t, c, clock, completedAndFailed(jobs, clock, "boom\x00")...)
	for _, j := range jobs {
		if !got[j.ID] {
			t.Errorf("job %d's outcome, written by the write whose answer was lost, is reported refused", j.ID)
		}
	}
	if lost.calls.Load() != 2 {
		t.Errorf("%d writes, want the lost one and its retry", lost.calls.Load())
	}
	if row, _ := st.Get(ctx, jobs[1].ID); row.State != store.StateRetryable || len(row.Errors) != 1 {
		t.Errorf("the failed job is %s with %d errors, want retryable with its one", row.State, len(row.Errors))
	}
}

// A write whose answer was lost and that did not commit, while the job's lease ran out and it
// was rescued, is refused on its retry: the job is retryable under the same fence, but with the
// rescue's error, not the outcome's.
func TestOutcomeOfARescuedJobStaysRefusedAfterALostAnswer(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClock()
	st, jobs := running(t, filepath.Join(t.TempDir(), "rota.db"), 2, sqlite.WithClock(clock))
	lost := &lostAnswer{Store: st, before: func(ctx context.Context, _ []store.Outcome) {
		clock.Advance(2 * time.Minute) // past the claim's lease
		if rescued, err := st.Rescue(ctx, 10); err != nil || len(rescued) != 2 {
			t.Errorf("rescue: %d jobs, %v", len(rescued), err)
		}
	}}
	c := New(lost, clock, logged(t))
	got := settled(t, c, clock, completedAndFailed(jobs, clock, "boom")...)
	for _, j := range jobs {
		if got[j.ID] {
			t.Errorf("job %d's outcome is reported applied, but the job was rescued before it", j.ID)
		}
		if row, _ := st.Get(ctx, j.ID); row.State != store.StateRetryable {
			t.Errorf("job %d is %s, want retryable: rescued", j.ID, row.State)
		}
	}
}
