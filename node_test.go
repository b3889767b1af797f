package rota

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
)

func TestNodeRunsJobAndWaitReturnsResult(t *testing.T) {
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error {
		return j.SetResult(map[string]int{"double": j.Args.N * 2})
	}, nil)
	job := b.insert(t, testArgs{N: 21}, nil)
	row, err := b.client.Wait(context.Background(), job.ID)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	if row.State != StateCompleted || string(row.Result) != `{"double":42}` || row.Attempt != 1 {
		t.Fatalf("got state %s result %s attempt %d", row.State, row.Result, row.Attempt)
	}
}

func TestErrorRetriesWithBackoffThenDiscards(t *testing.T) {
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error {
		return errors.New("smtp down")
	}, nil)
	job := b.insert(t, testArgs{}, &InsertOpts{MaxAttempts: 2})

	b.event(t, EventJobFailed)
	row := b.get(t, job.ID)
	delay := row.RunAt.Sub(b.clock.Now())
	if row.State != StateRetryable || delay < 500*time.Millisecond || delay >= time.Second {
		t.Fatalf("after first failure: state %s, retry in %v; want retryable in [0.5s, 1s)", row.State, delay)
	}
	if len(row.Errors) != 1 || row.Errors[0].Error != "smtp down" || row.Errors[0].Attempt != 1 {
		t.Fatalf("errors after first failure: %+v", row.Errors)
	}

	b.clock.Advance(time.Second) // the retry is due, and the queue's poll fires
	b.event(t, EventJobDiscarded)
	row = b.get(t, job.ID)
	if row.State != StateDiscarded || row.Attempt != 2 || len(row.Errors) != 2 {
		t.Fatalf("after last attempt: state %s attempt %d errors %d", row.State, row.Attempt, len(row.Errors))
	}
	_, err := b.client.Wait(context.Background(), job.ID)
	var failed *JobFailedError
	if !errors.As(err, &failed) || !strings.Contains(err.Error(), "smtp down") {
		t.Fatalf("wait on discarded job: %v", err)
	}
}

func TestPanicIsRecordedWithStack(t *testing.T) {
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error {
		panic("card processor returned garbage")
	}, nil)
	job := b.insert(t, testArgs{}, nil)
	b.event(t, EventJobFailed)
	row := b.get(t, job.ID)
	if len(row.Errors) != 1 || !strings.Contains(row.Errors[0].Error, "panic: card processor returned garbage") ||
		!strings.Contains(row.Errors[0].Trace, "node_test.go") {
		t.Fatalf("panic not recorded with stack: %+v", row.Errors)
	}
}

func TestSnoozeKeepsTheAttempt(t *testing.T) {
	runs := make(chan int, 2)
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error {
		runs <- j.Attempt
		if len(runs) == 1 {
			return Snooze(time.Minute)
		}
		return nil
	}, nil)
	job := b.insert(t, testArgs{}, &InsertOpts{MaxAttempts: 1})
	b.event(t, EventJobSnoozed)
	row := b.get(t, job.ID)
	if row.State != StateScheduled || row.Attempt != 0 || !row.RunAt.Equal(b.clock.Now().Add(time.Minute)) {
		t.Fatalf("snoozed: state %s attempt %d run at %v", row.State, row.Attempt, row.RunAt)
	}
	b.clock.Advance(time.Minute)
	b.event(t, EventJobCompleted)
	if first, second := recv(t, runs), recv(t, runs); first != 1 || second != 1 {
		t.Fatalf("attempts seen by the handler: %d then %d, want 1 and 1", first, second)
	}
}

func TestCancelAndSupersededOutcomesEndWithoutRetry(t *testing.T) {
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error {
		if j.Args.N == 1 {
			return Cancel(errors.New("account closed"))
		}
		return Superseded("newer export requested")
	}, nil)
	for n, want := range map[int]string{1: "cancelled: account closed", 2: "superseded: newer export requested"} {
		job := b.insert(t, testArgs{N: n}, nil)
		b.event(t, EventJobCancelled)
		row := b.get(t, job.ID)
		if row.State != StateCancelled || len(row.Errors) != 1 || row.Errors[0].Error != want {
			t.Fatalf("n=%d: state %s errors %+v, want cancelled with %q", n, row.State, row.Errors, want)
		}
	}
}

func TestTimeoutCancelsTheContextAndRetries(t *testing.T) {
	started := make(chan struct{})
	b := setup(t, untilCancelled(started), nil)
	job := b.insert(t, testArgs{}, nil)
	recv(t, started)
	b.timers(t, baseTimers(b.node)+1) // the job's timeout
	b.clock.Advance(7 * time.Second)
	b.event(t, EventJobFailed)
	row := b.get(t, job.ID)
	if row.State != StateRetryable || !strings.Contains(row.Errors[0].Error, "timed out after 7s") {
		t.Fatalf("state %s errors %+v", row.State, row.Errors)
	}
}

func TestHungHandlerIsAbandonedAndItsSlotFreed(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	started := make(chan int, 2)
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error {
		started <- j.Args.N
		if j.Args.N == 1 {
			<-release // ignores ctx
		}
		return nil
	}, func(c *Config) { c.Queues = map[string]QueueConfig{QueueDefault: {MaxWorkers: 1}} })
	hung := b.insert(t, testArgs{N: 1}, nil)
	recv(t, started)
	next := b.insert(t, testArgs{N: 2}, nil)
	b.clock.Advance(7 * time.Second)  // timeout: ctx cancelled, handler ignores it
	b.timers(t, baseTimers(b.node)+1) // the grace timer
	b.clock.Advance(5 * time.Second)
	if ev := b.event(t, EventJobAbandoned); ev.Job.ID != hung.ID || ev.Error == "" || ev.Duration != 12*time.Second {
		t.Fatalf("abandoned event: job %d, error %q, ran %v; want job %d, why, 12s", ev.Job.ID, ev.Error, ev.Duration, hung.ID)
	}
	b.event(t, EventJobFailed)
	if row := b.get(t, hung.ID); row.State != StateRetryable || !strings.Contains(row.Errors[0].Error, "did not return") {
		t.Fatalf("hung job: state %s errors %+v", row.State, row.Errors)
	}
	if n := recv(t, started); n != 2 {
		t.Fatalf("next job started = %d, want 2", n)
	}
	b.event(t, EventJobCompleted)
	if row := b.get(t, next.ID); row.State != StateCompleted {
		t.Fatalf("job after the hung one: %s", row.State)
	}
}

func TestCancelRunningJobCancelsItsContext(t *testing.T) {
	started := make(chan struct{})
	b := setup(t, untilCancelled(started), nil)
	job := b.insert(t, testArgs{}, nil)
	recv(t, started)
	if _, err := b.client.Cancel(context.Background(), job.ID); err != nil {
		t.Fatal(err)
	}
	b.event(t, EventJobCancelled)
	if row := b.get(t, job.ID); row.State != StateCancelled || !strings.Contains(row.Errors[0].Error, "cancelled by user") {
		t.Fatalf("state %s errors %+v", row.State, row.Errors)
	}
}

func TestCancelFromAnotherClientArrivesWithHeartbeat(t *testing.T) {
	started := make(chan struct{})
	b := setup(t, untilCancelled(started), nil)
	job := b.insert(t, testArgs{}, nil)
	recv(t, started)
	other := NewClient(b.store, &ClientConfig{Clock: b.clock})
	if row, err := other.Cancel(context.Background(), job.ID); err != nil || row.State != StateRunning || !row.CancelRequested {
		t.Fatalf("cancel from another client: %+v, %v", row, err)
	}
	b.clock.Advance(JobLeaseDefault / 3) // heartbeat
	b.event(t, EventJobCancelled)
}

func TestUnknownKindWaitsForANodeThatKnowsIt(t *testing.T) {
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error { return nil }, nil)
	other := b.insert(t, RawArgs{KindName: "resize-image", JSON: json.RawMessage(`{"w":10}`)}, nil)
	known := b.insert(t, testArgs{}, nil)
	b.event(t, EventJobCompleted)
	if row := b.get(t, known.ID); row.State != StateCompleted {
		t.Fatalf("known kind: %s", row.State)
	}
	if row := b.get(t, other.ID); row.State != StateAvailable || row.Attempt != 0 {
		t.Fatalf("unknown kind: state %s attempt %d, want available and untouched", row.State, row.Attempt)
	}
}

func TestArgsThatDoNotDecodeAreDiscardedWithTheReason(t *testing.T) {
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error { return nil }, nil)
	job := b.insert(t, RawArgs{KindName: "test", JSON: json.RawMessage(`{"n":"not a number"}`)}, nil)
	b.event(t, EventJobDiscarded)
	row := b.get(t, job.ID)
	if row.State != StateDiscarded || !strings.Contains(row.Errors[0].Error, "decode args") {
		t.Fatalf("state %s errors %+v", row.State, row.Errors)
	}
}

func TestHugeResultFailsTheAttempt(t *testing.T) {
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error {
		return j.SetResult(strings.Repeat("x", 2000))
	}, func(c *Config) { c.MaxResultBytes = 1000 })
	job := b.insert(t, testArgs{}, &InsertOpts{MaxAttempts: 1})
	b.event(t, EventJobDiscarded)
	if row := b.get(t, job.ID); !strings.Contains(row.Errors[0].Error, "over the limit of 1000 bytes") || row.Result != nil {
		t.Fatalf("errors %+v result %d bytes", row.Errors, len(row.Result))
	}
}

func TestRescueReturnsJobsOfADeadNode(t *testing.T) {
	done := make(chan int64, 1)
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error {
		done <- j.ID
		return nil
	}, func(c *Config) { c.Queues = map[string]QueueConfig{"other": {}} })
	// A node that claims and then dies: it never heartbeats nor completes.
	job := b.insert(t, testArgs{}, &InsertOpts{Queue: "mail"})
	claimed, err := b.store.Claim(context.Background(), store.ClaimParams{
		Queue: "mail", Kinds: []string{"test"}, Max: 1, Owner: "dead-node", LeaseFor: JobLeaseDefault,
	})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim by the doomed node: %v, %d jobs", err, len(claimed))
	}
	b.clock.Advance(RescueIntervalDefault) // too early: the lease holds
	// A rescue pass made now, not left to the loop's goroutine, so the check below follows it.
	b.node.service(t, ServiceRescuer).Pass(context.Background())
	if row := b.get(t, job.ID); row.State != StateRunning {
		t.Fatalf("rescued before its lease expired: %s", row.State)
	}
	b.clock.Advance(JobLeaseDefault + RescueIntervalDefault)
	ev := b.event(t, EventJobRescued)
	if ev.Job.ID != job.ID || ev.Job.State != StateRetryable {
		t.Fatalf("rescued %+v", ev.Job)
	}
	// The pass that rescued it says so: a rescuer run that counts one job.
	run := b.event(t, EventServiceRun)
	for run.Service != ServiceRescuer {
		run = b.event(t, EventServiceRun)
	}
	if run.Count != 1 {
		t.Fatalf("the rescuer's run counts %d jobs, want 1", run.Count)
	}
	row := b.get(t, job.ID)
	if len(row.Errors) != 1 || !strings.Contains(row.Errors[0].Error, "lease expired") {
		t.Fatalf("after rescue: errors %+v", row.Errors)
	}
}

// A node that does not lead rescues too: when the leader dies, its jobs must not wait for its
// leader lease to pass before anyone takes them back.
func TestFollowerRescuesJobsOfADeadNode(t *testing.T) {
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error { return nil }, func(c *Config) {
		c.Leader = LeaderConfig{}
		// Another node holds the leader lease for far longer than the test runs.
		if _, held, err := c.Store.(store.Leaser).AcquireLease(context.Background(), "rota.leader", "the-leader", 24*time.Hour); err != nil || !held {
			t.Fatalf("take the leader lease for another node: held %v, %v", held, err)
		}
	})
	job := b.insert(t, testArgs{}, &InsertOpts{Queue: "mail"})
	if _, err := b.store.Claim(context.Background(), store.ClaimParams{
		Queue: "mail", Kinds: []string{"test"}, Max: 1, Owner: "the-leader", LeaseFor: JobLeaseDefault,
	}); err != nil {
		t.Fatalf("claim by the leader: %v", err)
	}
	b.clock.Advance(JobLeaseDefault + RescueIntervalDefault)
	ev := b.event(t, EventJobRescued)
	if ev.Job.ID != job.ID || ev.Job.State != StateRetryable {
		t.Fatalf("rescued %+v", ev.Job)
	}
	if b.node.IsLeader() {
		t.Fatal("the node became leader: the test proved nothing")
	}
}

func TestStopDrainsRunningJobs(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error {
		close(started)
		<-release
		return nil
	}, nil)
	job := b.insert(t, testArgs{}, nil)
	recv(t, started)
	stopped := make(chan error, 1)
	go func() { stopped <- b.node.Stop(context.Background()) }()
	<-b.node.stopFetch // Stop has begun
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a job ran", err)
	default:
	}
	close(release)
	if err := recv(t, stopped); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if row := b.get(t, job.ID); row.State != StateCompleted {
		t.Fatalf("drained job: %s", row.State)
	}
}

// hungClaims is a store whose claims never answer, as over a connection to a database that
// vanished without closing it; entered receives each claim's context.
type hungClaims struct {
	store.Store
	entered chan context.Context
}

func (h hungClaims) Claim(ctx context.Context, _ store.ClaimParams) ([]*store.JobRow, error) {
	h.entered <- ctx
	<-ctx.Done()
	return nil, ctx.Err()
}

// Stop's deadline bounds it even while a claim hangs: the claim is cancelled.
func TestStopEndsAHungClaimAtItsDeadline(t *testing.T) {
	entered := make(chan context.Context, 1)
	b := setup(t, func(context.Context, *Job[testArgs]) error { return nil }, func(cfg *Config) {
		cfg.Store = hungClaims{Store: cfg.Store, entered: entered}
	})
	claim := recv(t, entered)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- b.node.Stop(ctx) }()
	<-b.node.stopFetch // Stop has begun
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) before its deadline while a claim was in flight", err)
	case <-claim.Done():
		t.Fatal("the claim was cancelled before Stop's deadline")
	default:
	}
	cancel()
	if err := recv(t, stopped); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if claim.Err() == nil {
		t.Fatal("Stop returned with the claim still in flight")
	}
}

func TestStopHandsInterruptedJobsBackFirstInLine(t *testing.T) {
	started := make(chan struct{})
	b := setup(t, untilCancelled(started), nil)
	job := b.insert(t, testArgs{}, &InsertOpts{MaxAttempts: 1})
	recv(t, started)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no time to drain
	if err := b.node.Stop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("stop: %v, want the drain deadline reported", err)
	}
	if ev := b.event(t, EventDrainDeadline); ev.Count != 1 {
		t.Fatalf("drain deadline event counts %d running jobs, want 1", ev.Count)
	}
	row := b.get(t, job.ID)
	if row.State != StateAvailable || row.Attempt != 0 || !row.RunAt.Equal(job.RunAt) || len(row.Errors) != 0 {
		t.Fatalf("handed back: state %s attempt %d run at %v (was %v) errors %v", row.State, row.Attempt, row.RunAt, job.RunAt, row.Errors)
	}
}

// slowArgs carry their own time limit, as a backup job sized to its mailbox would.
type slowArgs struct {
	Limit time.Duration `json:"limit"`
}

func (slowArgs) Kind() string { return "slow" }

type slowWorker struct{ deadline chan time.Time }

func (w slowWorker) Timeout(j *Job[slowArgs]) time.Duration { return j.Args.Limit }

func (w slowWorker) Work(ctx context.Context, j *Job[slowArgs]) error {
	deadline, _ := ctx.Deadline()
	w.deadline <- deadline
	<-ctx.Done()
	return ctx.Err()
}

func TestPerJobTimeoutOverridesTheKinds(t *testing.T) {
	w := slowWorker{deadline: make(chan time.Time, 1)}
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error { return nil }, func(c *Config) {
		AddWorker(c.Workers, Worker[slowArgs](w), &WorkerOptions{Timeout: time.Second})
		c.JobLease = 2 * time.Hour // the hour is jumped in one step, with no heartbeat between
	})
	job := b.insert(t, slowArgs{Limit: time.Hour}, nil)
	if deadline := recv(t, w.deadline); !deadline.Equal(epoch.Add(time.Hour)) {
		t.Fatalf("context deadline %v, want the job's own hour (%v)", deadline, epoch.Add(time.Hour))
	}
	b.clock.Advance(time.Hour)
	b.event(t, EventJobFailed)
	if row := b.get(t, job.ID); !strings.Contains(row.Errors[0].Error, "timed out after 1h0m0s") {
		t.Fatalf("errors %+v", row.Errors)
	}
}

// panickyLimitArgs belong to a worker whose Timeouter panics on them.
type panickyLimitArgs struct{}

func (panickyLimitArgs) Kind() string { return "panicky-limit" }

type panickyLimit struct{}

func (panickyLimit) Timeout(*Job[panickyLimitArgs]) time.Duration { panic("no limit for this one") }

func (panickyLimit) Work(context.Context, *Job[panickyLimitArgs]) error { return nil }

// A Timeouter is user code like the handler: its panic fails the attempt, with its stack, and
// the node runs on.
func TestTimeouterPanicFailsTheAttempt(t *testing.T) {
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error { return nil }, func(c *Config) {
		AddWorker(c.Workers, Worker[panickyLimitArgs](panickyLimit{}), nil)
	})
	job := b.insert(t, panickyLimitArgs{}, nil)
	b.event(t, EventJobFailed)
	row := b.get(t, job.ID)
	if row.State != StateRetryable || len(row.Errors) != 1 ||
		!strings.Contains(row.Errors[0].Error, "no limit for this one") || !strings.Contains(row.Errors[0].Trace, "panickyLimit") {
		t.Fatalf("after the Timeouter panicked: state %s errors %+v", row.State, row.Errors)
	}
	b.insert(t, testArgs{}, nil)
	b.event(t, EventJobCompleted)
}

func TestMemoryFloorStopsClaimsUntilMemoryReturns(t *testing.T) {
	var avail atomic.Uint64
	avail.Store(100)
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error { return nil }, func(c *Config) {
		c.MinFreeMemory = 1000
		c.availableMemory = func() (uint64, error) { return avail.Load(), nil }
	})
	job := b.insert(t, testArgs{}, nil)
	b.event(t, EventMemoryLow)
	if row := b.get(t, job.ID); row.State != StateAvailable {
		t.Fatalf("claimed while memory was low: %s", row.State)
	}
	avail.Store(5000)
	b.clock.Advance(FetchPollIntervalDefault) // the next poll, a second after the last check
	b.event(t, EventMemoryOK)
	b.event(t, EventJobCompleted)
}

// A negative interval, or a lease too short to heartbeat, is refused by NewNode: a ticker of it
// would panic once the node ran.
func TestNewNodeRefusesIntervalsThatCannotWork(t *testing.T) {
	for _, cfg := range []Config{{JobLease: -time.Second}, {JobLease: 2}, {RescueInterval: -time.Second}, {PruneInterval: -1}} {
		cfg.Store = openStore(t, clockwork.NewFakeClockAt(epoch))
		cfg.Workers = NewWorkers()
		AddWorker(cfg.Workers, WorkFunc[testArgs](func(context.Context, *Job[testArgs]) error { return nil }), nil)
		if _, err := NewNode(cfg); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewNode(JobLease %v, RescueInterval %v, PruneInterval %v): %v, want ErrInvalid", cfg.JobLease, cfg.RescueInterval, cfg.PruneInterval, err)
		}
	}
}
