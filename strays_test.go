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

// strayStore is a SQLite store that misbehaves as a test asks: once lose is set, its next claim
// that takes jobs commits but fails, as when the connection to PostgreSQL or Redis breaks after
// the commit; once fail is set, its next claim fails taking nothing; while hold is set, its
// Complete waits until release is closed. It records every outcome, and reports each heartbeat
// on beat once it is done, and with it the node's look for strays, which comes just before.
type strayStore struct {
	*sqlite.Store
	lose, fail, hold atomic.Bool
	release          chan struct{}
	beat             chan struct{}
	written          chan int64
	mu               sync.Mutex
	outcomes         []store.Outcome
}

// wrapStrays puts a strayStore in c's place of its store.
func wrapStrays(c *Config) *strayStore {
	st := &strayStore{Store: c.Store.(*sqlite.Store), release: make(chan struct{}), beat: make(chan struct{}, 10),
		written: make(chan int64, 100)}
	c.Store = st
	return st
}

func (s *strayStore) Claim(ctx context.Context, p store.ClaimParams) ([]*store.JobRow, error) {
	if s.fail.CompareAndSwap(true, false) {
		return nil, errors.New("read tcp: connection reset by peer")
	}
	rows, err := s.Store.Claim(ctx, p)
	if err == nil && len(rows) > 0 && s.lose.CompareAndSwap(true, false) {
		return nil, errors.New("read tcp: connection reset by peer")
	}
	return rows, err
}

func (s *strayStore) Heartbeat(ctx context.Context, owner string, lease time.Duration) ([]int64, error) {
	ids, err := s.Store.Heartbeat(ctx, owner, lease)
	select {
	case s.beat <- struct{}{}:
	default: // beats the test no longer waits for
	}
	return ids, err
}

func (s *strayStore) Complete(ctx context.Context, o []store.Outcome) ([]bool, error) {
	s.mu.Lock()
	s.outcomes = append(s.outcomes, o...)
	s.mu.Unlock()
	if s.hold.Load() {
		<-s.release
	}
	applied, err := s.Store.Complete(ctx, o)
	for i := range applied {
		select {
		case s.written <- o[i].ID:
		default:
		}
	}
	return applied, err
}

// heartbeats moves the clock on by n heartbeats, one at a time, each once the last is done.
func heartbeats(t *testing.T, b *bundle, st *strayStore, n int) {
	t.Helper()
	for range n {
		b.clock.Advance(JobLeaseDefault / 3)
		recv(t, st.beat)
	}
}

// runsAgain waits for the outcome written for job id, moves the clock on past the next claim's
// poll, and returns the job's next run.
func runsAgain(t *testing.T, b *bundle, st *strayStore, id int64, ran <-chan *Job[testArgs]) *Job[testArgs] {
	t.Helper()
	for recv(t, st.written) != id {
	}
	b.clock.Advance(JobLeaseDefault / 3)
	return recv(t, ran)
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
	var st *strayStore
	b := setup(t, func(_ context.Context, j *Job[testArgs]) error {
		ran <- j
		return nil
	}, func(c *Config) {
		st = wrapStrays(c)
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
	// The second heartbeat that finds the job running nowhere hands it back, well within the
	// lease it keeps renewing.
	heartbeats(t, b, st, 2)
	if j := runsAgain(t, b, st, job.ID, ran); j.ID != job.ID || j.Attempt != 1 {
		t.Fatalf("ran job %d attempt %d, want job %d attempt 1 (the lost claim's refunded)", j.ID, j.Attempt, job.ID)
	}
}

// A job whose attempt has ended and whose outcome is still being written runs nowhere too, but
// it is no stray: the heartbeats that look for strays after a failed claim leave it alone.
func TestJobWhoseOutcomeIsBeingWrittenIsNoStray(t *testing.T) {
	var st *strayStore
	b := setup(t, func(context.Context, *Job[testArgs]) error { return nil }, func(c *Config) { st = wrapStrays(c) })
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
	heartbeats(t, b, st, 3) // a look that finds it, one that would hand it back, and one more
	free()
	for ev := b.event(t, EventJobCompleted); ev.Job.ID != job.ID; ev = b.event(t, EventJobCompleted) {
	}
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
	longStarted, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	var job *JobRow
	var st *strayStore
	b := setupWith(t, func(_ context.Context, j *Job[testArgs]) error {
		ran <- j
		return nil
	}, func(c *Config) {
		st = wrapStrays(c)
		addLong(c, longStarted, release)
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
	recv(t, longStarted) // from now on the node heartbeats
	heartbeats(t, b, st, 2)
	j := runsAgain(t, b, st, job.ID, ran)
	if j.ID != job.ID || j.Attempt != 2 {
		t.Fatalf("ran job %d attempt %d, want job %d attempt 2 (the earlier process's counts)", j.ID, j.Attempt, job.ID)
	}
	if len(j.Errors) != 1 || !strings.Contains(j.Errors[0].Error, "restarted") {
		t.Fatalf("errors %+v, want the earlier attempt's, saying the node restarted", j.Errors)
	}
}
