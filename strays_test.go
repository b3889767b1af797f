package rota

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

// lostClaimAnswer is a store whose next claim that takes jobs, once lose is set, commits but
// fails, as when the connection to PostgreSQL or Redis breaks after the commit.
type lostClaimAnswer struct {
	*sqlite.Store
	lose atomic.Bool
}

func (s *lostClaimAnswer) Claim(ctx context.Context, p store.ClaimParams) ([]*store.JobRow, error) {
	rows, err := s.Store.Claim(ctx, p)
	if err == nil && len(rows) > 0 && s.lose.CompareAndSwap(true, false) {
		return nil, errors.New("read tcp: connection reset by peer")
	}
	return rows, err
}

// longArgs is a kind without a timeout whose job runs until the test ends.
type longArgs struct{}

func (longArgs) Kind() string { return "long" }

// addLong adds to c a worker of longArgs whose job closes started and runs until release is
// closed: the node's own work, which keeps it heartbeating.
func addLong(c *Config, started, release chan struct{}) {
	AddWorker(c.Workers, WorkFunc[longArgs](func(ctx context.Context, j *Job[longArgs]) error {
		close(started)
		<-release
		return nil
	}), &WorkerOptions{Timeout: -1})
}

// A job taken by a claim whose answer was lost is not run by this node, and the node's
// heartbeat, which renews every lease the store lists under its name, would keep it running
// nowhere for as long as the node has other work. The node notices it at two heartbeats in a
// row and hands it back, its attempt refunded; then it runs.
func TestJobOfAClaimWhoseAnswerWasLostIsHandedBack(t *testing.T) {
	ran := make(chan *Job[testArgs], 1)
	longStarted, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	var st *lostClaimAnswer
	b := setup(t, func(_ context.Context, j *Job[testArgs]) error {
		ran <- j
		return nil
	}, func(c *Config) {
		st = &lostClaimAnswer{Store: c.Store.(*sqlite.Store)}
		c.Store = st
		addLong(c, longStarted, release)
	})
	b.insert(t, longArgs{}, nil) // the node is busy with it all along: it heartbeats
	recv(t, longStarted)
	st.lose.Store(true)
	job := b.insert(t, testArgs{}, nil)
	for ev := b.event(t, EventStoreError); ev.Op != "claim"; ev = b.event(t, EventStoreError) {
	}
	if row := b.get(t, job.ID); row.State != StateRunning || row.Owner != "node-a" {
		t.Fatalf("after the lost answer the job is %s under %q, want running under node-a", row.State, row.Owner)
	}
	// A heartbeat at a time, each given a moment to run: the second that finds the job running
	// nowhere hands it back, well within the lease it keeps renewing.
	for range 6 {
		b.clock.Advance(JobLeaseDefault / 3)
		select {
		case j := <-ran:
			if j.ID != job.ID || j.Attempt != 1 {
				t.Fatalf("ran job %d attempt %d, want job %d attempt 1 (the lost claim's refunded)", j.ID, j.Attempt, job.ID)
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	row := b.get(t, job.ID)
	t.Fatalf("job %d is still %s under %q, lease until %v (now %v): it runs nowhere",
		row.ID, row.State, row.Owner, row.LeaseUntil, b.clock.Now())
}

// slowOutcomes is a store whose Complete waits, once hold is set, until release is closed, and
// which records every outcome it is given; its next claim after fail is set fails, taking
// nothing; and it reports each heartbeat on beat, once the node's look for strays, which comes
// before it, is done.
type slowOutcomes struct {
	*sqlite.Store
	hold, fail atomic.Bool
	release    chan struct{}
	beat       chan struct{}
	mu         sync.Mutex
	outcomes   []store.Outcome
}

func (s *slowOutcomes) Heartbeat(ctx context.Context, owner string, lease time.Duration) ([]int64, error) {
	ids, err := s.Store.Heartbeat(ctx, owner, lease)
	s.beat <- struct{}{}
	return ids, err
}

func (s *slowOutcomes) Complete(ctx context.Context, o []store.Outcome) ([]bool, error) {
	s.mu.Lock()
	s.outcomes = append(s.outcomes, o...)
	s.mu.Unlock()
	if s.hold.Load() {
		<-s.release
	}
	return s.Store.Complete(ctx, o)
}

func (s *slowOutcomes) Claim(ctx context.Context, p store.ClaimParams) ([]*store.JobRow, error) {
	if s.fail.CompareAndSwap(true, false) {
		return nil, errors.New("read tcp: connection reset by peer")
	}
	return s.Store.Claim(ctx, p)
}

// A job whose attempt has ended and whose outcome is still being written runs nowhere too, but
// it is no stray: the heartbeats that look for strays after a failed claim leave it alone.
func TestJobWhoseOutcomeIsBeingWrittenIsNoStray(t *testing.T) {
	var st *slowOutcomes
	b := setup(t, func(context.Context, *Job[testArgs]) error { return nil }, func(c *Config) {
		st = &slowOutcomes{Store: c.Store.(*sqlite.Store), release: make(chan struct{}), beat: make(chan struct{}, 10)}
		c.Store = st
	})
	var once sync.Once
	free := func() { once.Do(func() { close(st.release) }) }
	defer free() // before the node's stop, which waits for the outcome
	st.hold.Store(true)
	job := b.insert(t, testArgs{}, nil)
	b.event(t, EventJobStarted)
	st.fail.Store(true)
	b.insert(t, testArgs{N: 1}, nil) // its claim fails: the node looks for strays from now on
	for ev := b.event(t, EventStoreError); ev.Op != "claim"; ev = b.event(t, EventStoreError) {
	}
	for range 3 { // a look that finds it, one that would hand it back, and one more
		b.clock.Advance(JobLeaseDefault / 3)
		recv(t, st.beat)
	}
	free()
	b.event(t, EventJobCompleted)
	if row := b.get(t, job.ID); row.State != StateCompleted {
		t.Fatalf("job %d is %s, want completed", job.ID, row.State)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, o := range st.outcomes {
		if o.ID == job.ID && o.State == StateAvailable {
			t.Fatalf("job %d, whose outcome was being written, was handed back as a stray: %+v", job.ID, st.outcomes)
		}
	}
}

// A job that a process which ran before this one under the same node id left running (it died;
// the id was kept across the restart) is not this node's to run, and the heartbeat would renew
// it for as long as the node has work. The node notices it at its first heartbeats and ends the
// attempt as a rescue would, failed: the attempt ran, and may be what killed that process.
func TestJobLeftByAnEarlierProcessOfTheNodeIsRetried(t *testing.T) {
	ran := make(chan *Job[testArgs], 1)
	release := make(chan struct{})
	defer close(release)
	var job *JobRow
	b := setupWith(t, func(_ context.Context, j *Job[testArgs]) error {
		ran <- j
		return nil
	}, func(c *Config) {
		addLong(c, make(chan struct{}), release)
	}, func(n *Node) {
		ctx := context.Background()
		if _, err := n.Client().Insert(ctx, testArgs{}, nil); err != nil {
			t.Fatal(err)
		}
		// The node's own work, all along: it heartbeats.
		if _, err := n.Client().Insert(ctx, longArgs{}, nil); err != nil {
			t.Fatal(err)
		}
		got, err := n.cfg.Store.Claim(ctx, store.ClaimParams{Queue: QueueDefault, Kinds: []string{"test"}, Max: 1,
			Owner: n.cfg.ID, LeaseFor: JobLeaseDefault})
		if err != nil || len(got) != 1 {
			t.Fatalf("the earlier process's claim: %d jobs, %v", len(got), err)
		}
		job = got[0]
		n.clock.(*clockwork.FakeClock).Advance(time.Second) // it died; this one starts a second later
	})
	for range 6 {
		b.clock.Advance(JobLeaseDefault / 3)
		select {
		case j := <-ran:
			if j.ID != job.ID || j.Attempt != 2 {
				t.Fatalf("ran job %d attempt %d, want job %d attempt 2 (the earlier process's counts)", j.ID, j.Attempt, job.ID)
			}
			if len(j.Errors) != 1 || !strings.Contains(j.Errors[0].Error, "restarted") {
				t.Fatalf("errors %+v, want the earlier attempt's, saying the node restarted", j.Errors)
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	row := b.get(t, job.ID)
	t.Fatalf("job %d is still %s under %q: it runs nowhere", row.ID, row.State, row.Owner)
}
