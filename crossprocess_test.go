package rota

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

// seen is a SQLite store that reports each claim and each read of a job once it returned, so a
// test knows its node or its Wait has looked and is now idle.
type seen struct {
	*sqlite.Store
	claimed, got chan struct{}
}

func (s seen) Claim(ctx context.Context, p store.ClaimParams) ([]*store.JobRow, error) {
	rows, err := s.Store.Claim(ctx, p)
	tell(s.claimed)
	return rows, err
}

func (s seen) Get(ctx context.Context, id int64) (*store.JobRow, error) {
	row, err := s.Store.Get(ctx, id)
	tell(s.got)
	return row, err
}

func tell(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// openShared opens the SQLite file at path as a process of its own would: its own connections.
func openShared(t *testing.T, path string, clock clockwork.Clock) seen {
	st, err := sqlite.Open(context.Background(), path, sqlite.WithClock(clock), sqlite.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return seen{Store: st, claimed: make(chan struct{}, 1), got: make(chan struct{}, 1)}
}

// A job inserted by another process on the same SQLite file wakes an idle node at once. Here
// the fake clock never reaches the node's poll, so only the store's watcher can wake it.
func TestJobFromAnotherProcessWakesTheNode(t *testing.T) {
	clock := clockwork.NewFakeClockAt(epoch)
	path := filepath.Join(t.TempDir(), "rota.db")
	here := openShared(t, path, clock)
	there := NewClient(openShared(t, path, clock), &ClientConfig{Clock: clock})

	ran := make(chan int64, 1)
	workers := NewWorkers()
	AddWorker(workers, WorkFunc[testArgs](func(ctx context.Context, j *Job[testArgs]) error {
		ran <- j.ID
		return nil
	}), nil)
	node, err := NewNode(Config{Store: here, Workers: workers, Clock: clock, Logger: testLogger(t),
		Leader: LeaderConfig{Standalone: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Stop(context.Background()) })
	recv(t, here.claimed) // the first claim found nothing; the node is idle

	res, err := there.Insert(context.Background(), testArgs{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if id := recv(t, ran); id != res.Job.ID {
		t.Fatalf("ran job %d, want %d", id, res.Job.ID)
	}
}

// Wait learns that a job another process ran has ended without waiting for its poll.
func TestWaitSeesAnotherProcessFinishTheJob(t *testing.T) {
	clock := clockwork.NewFakeClockAt(epoch)
	path := filepath.Join(t.TempDir(), "rota.db")
	here, there := openShared(t, path, clock), openShared(t, path, clock)
	res, err := NewClient(there, &ClientConfig{Clock: clock}).Insert(context.Background(), testArgs{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := NewClient(here, &ClientConfig{Clock: clock}).Wait(context.Background(), res.Job.ID)
		done <- err
	}()
	recv(t, here.got) // Wait has read the job unfinished and waits; its poll never comes
	rows, err := there.Claim(context.Background(), store.ClaimParams{Queue: QueueDefault, Kinds: []string{"test"}, Max: 1, Owner: "there", LeaseFor: JobLeaseDefault})
	if err != nil || len(rows) != 1 {
		t.Fatalf("claim: %v, %v", rows, err)
	}
	if _, err := there.Complete(context.Background(), []store.Outcome{{ID: rows[0].ID, Fence: rows[0].Fence, State: StateCompleted}}); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done); err != nil {
		t.Fatalf("wait: %v", err)
	}
}

// timesOutAtDeadline is a SQLite store whose reads of a job, once armed, end when their
// context does, with the error a network store gives for a read cut by its deadline: the
// connection's own timeout, which it reports as the store unavailable.
type timesOutAtDeadline struct {
	*sqlite.Store
	armed chan struct{}
}

func (s timesOutAtDeadline) Get(ctx context.Context, id int64) (*store.JobRow, error) {
	select {
	case <-s.armed:
		<-ctx.Done()
		return nil, fmt.Errorf("%w: read tcp 127.0.0.1:6379: i/o timeout", store.ErrUnavailable)
	default:
		return s.Store.Get(ctx, id)
	}
}

// A Wait whose deadline passes while it reads the job ends with the deadline, whatever the
// store said of the read it cut: a caller (the HTTP API's wait) answers "not done yet" to a
// deadline, and "store unavailable" only to a store that is.
func TestWaitEndsWithItsDeadlineDuringARead(t *testing.T) {
	clock := clockwork.NewRealClock()
	st := timesOutAtDeadline{Store: openStore(t, clock), armed: make(chan struct{})}
	c := NewClient(st, &ClientConfig{Clock: clock})
	res, err := c.Insert(context.Background(), testArgs{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	close(st.armed)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c.Wait(ctx, res.Job.ID)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Wait past its deadline: %v; want context.DeadlineExceeded, not the store unavailable", err)
	}
}
