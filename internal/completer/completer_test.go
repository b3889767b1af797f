package completer

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

// signal reports each failed write on warned, so the test knows a write failed.
func signal(t *testing.T, warned chan struct{}) func(Failure) {
	return func(f Failure) {
		t.Logf("write of %d outcomes failed (%s next): %v", f.Jobs, f.Next, f.Err)
		select {
		case warned <- struct{}{}:
		default:
		}
	}
}

// runWithoutWaits runs c until the test ends, moving clock on whenever c waits to retry: each
// retry comes at once.
func runWithoutWaits(t *testing.T, c *Completer, clock *clockwork.FakeClock) {
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go c.Run(ctx, nil)
	go func() {
		for ctx.Err() == nil {
			if clock.BlockUntilContext(ctx, 1) == nil {
				clock.Advance(retryBackoff.Max)
			}
		}
	}()
}

// logged logs each failed write.
func logged(t *testing.T) func(Failure) {
	return func(f Failure) { t.Logf("write of %d outcomes failed (%s next): %v", f.Jobs, f.Next, f.Err) }
}

// running opens a real SQLite store at path, closed when the test ends, with n jobs inserted
// and claimed: running, waiting for their outcomes.
func running(t *testing.T, path string, n int, opts ...sqlite.Option) (*sqlite.Store, []*store.JobRow) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if n == 0 {
		return st, nil
	}
	params := make([]store.InsertParams, n)
	for i := range params {
		params[i] = store.InsertParams{Kind: "k", Queue: "q", MaxAttempts: 5}
	}
	if _, err := st.Insert(ctx, params); err != nil {
		t.Fatal(err)
	}
	jobs, err := st.Claim(ctx, store.ClaimParams{Queue: "q", Kinds: []string{"k"}, Max: n, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(jobs) != n {
		t.Fatalf("claim: %v, %v", jobs, err)
	}
	return st, jobs
}

// TestOutcomeSurvivesAStoreThatRefusesWrites holds the database's write lock from another
// connection, as a busy neighbour process would, so the completer's writes fail; when the lock is
// released the outcome is recorded, not lost, result and all: a store that is unavailable for
// a while refuses nothing, and nothing is stripped for it.
func TestOutcomeSurvivesAStoreThatRefusesWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "rota.db")
	st, jobs := running(t, path, 1, sqlite.WithBusyTimeout(20*time.Millisecond))

	neighbour, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer neighbour.Close()
	lock, err := neighbour.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(`CREATE TABLE IF NOT EXISTS neighbour (x)`); err != nil {
		t.Fatal(err)
	}

	warned := make(chan struct{}, 3)
	c := New(st, clockwork.NewRealClock(), signal(t, warned))
	applied := make(chan bool, 1)
	c.Add(store.Outcome{ID: jobs[0].ID, Fence: jobs[0].Fence, State: store.StateCompleted, Result: []byte(`{"total":42}`)},
		func(ok bool) { applied <- ok })
	drain := make(chan struct{})
	done := make(chan struct{})
	go func() { c.Run(ctx, drain); close(done) }()

	for range 3 { // past the refusals after which an outcome would be stripped
		select {
		case <-warned:
		case <-time.After(10 * time.Second):
			t.Fatal("the write did not fail three times: the lock did not hold")
		}
	}
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	select {
	case ok := <-applied:
		if !ok {
			t.Fatal("outcome not applied after the store came back")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("outcome not recorded within 10s of the store coming back")
	}
	close(drain)
	<-done
	if row, _ := st.Get(ctx, jobs[0].ID); row.State != store.StateCompleted || string(row.Result) != `{"total":42}` {
		t.Fatalf("job is %s with result %q, want completed with {\"total\":42}", row.State, row.Result)
	}
}

// refusing is a store that refuses any write carrying an outcome whose error says POISON, as
// PostgreSQL refused error texts holding a NUL.
type refusing struct{ store.Store }

func (r refusing) Complete(ctx context.Context, outcomes []store.Outcome) ([]bool, error) {
	for _, o := range outcomes {
		if o.Error != nil && strings.Contains(o.Error.Error, "POISON") {
			return nil, errors.New("invalid input syntax")
		}
	}
	return r.Store.Complete(ctx, outcomes)
}

// An outcome the store refuses does not hold back the ones written with it, and is itself
// recorded without the text the store refused.
func TestRefusedOutcomeHoldsNothingBack(t *testing.T) {
	ctx := context.Background()
	st, jobs := running(t, filepath.Join(t.TempDir(), "rota.db"), 2)
	clock := clockwork.NewFakeClock()
	var mu sync.Mutex
	steps := map[Next]int{}
	c := New(refusing{st}, clock, func(f Failure) {
		mu.Lock()
		defer mu.Unlock()
		steps[f.Next]++
	})
	results := make(chan bool, 2)
	bad, good := jobs[0], jobs[1]
	c.Add(store.Outcome{ID: bad.ID, Fence: bad.Fence, State: store.StateRetryable, RunAt: clock.Now(),
		Error: &store.AttemptError{Attempt: 1, At: clock.Now(), Error: "POISON"}}, func(ok bool) { results <- ok })
	c.Add(store.Outcome{ID: good.ID, Fence: good.Fence, State: store.StateCompleted}, func(ok bool) { results <- ok })
	runWithoutWaits(t, c, clock)
	for range 2 {
		select {
		case ok := <-results:
			if !ok {
				t.Fatal("an outcome was not applied")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("outcomes not recorded within 10s")
		}
	}
	if row, _ := st.Get(ctx, good.ID); row.State != store.StateCompleted {
		t.Fatalf("the good outcome's job is %s", row.State)
	}
	mu.Lock()
	if steps[Retry] == 0 || steps[Split] != 1 || steps[Stripped] != 1 {
		t.Errorf("failures reported: %v; want retries, then one split, then one outcome stripped", steps)
	}
	mu.Unlock()
	row, _ := st.Get(ctx, bad.ID)
	if row.State != store.StateRetryable || len(row.Errors) != 1 || !strings.HasPrefix(row.Errors[0].Error, "the store refused this attempt's error text") {
		t.Fatalf("the refused outcome's job: %s %+v", row.State, row.Errors)
	}
}

// blocking is a store whose writes wait until release is closed, reporting each on entered.
type blocking struct {
	store.Store
	entered chan struct{}
	release chan struct{}
}

func (b blocking) Complete(ctx context.Context, outcomes []store.Outcome) ([]bool, error) {
	b.entered <- struct{}{}
	<-b.release
	return b.Store.Complete(ctx, outcomes)
}

// An outcome being written is still pending: the node heartbeats while any is, so the job's
// lease holds until the outcome is recorded.
func TestPendingCountsTheWriteInFlight(t *testing.T) {
	ctx := context.Background()
	st, _ := running(t, filepath.Join(t.TempDir(), "rota.db"), 0)
	b := blocking{Store: st, entered: make(chan struct{}, 1), release: make(chan struct{})}
	c := New(b, clockwork.NewFakeClock(), logged(t))
	written := make(chan bool, 1)
	c.Add(store.Outcome{ID: 1, Fence: 1, State: store.StateCompleted}, func(ok bool) { written <- ok })
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go c.Run(runCtx, nil)
	<-b.entered
	if n := c.Pending(); n != 1 {
		t.Fatalf("Pending = %d while the outcome is being written, want 1", n)
	}
	close(b.release)
	<-written // job 1 does not exist: not applied, but written
}

// Holds names the outcomes waiting and those being written, by job and fence, and no others:
// the node takes a job it holds as ended here, not as running nowhere.
func TestHoldsWhatIsWaitingAndWhatIsBeingWritten(t *testing.T) {
	st, _ := running(t, filepath.Join(t.TempDir(), "rota.db"), 0)
	b := blocking{Store: st, entered: make(chan struct{}, 1), release: make(chan struct{})}
	c := New(b, clockwork.NewFakeClock(), logged(t))
	written := make(chan bool, 1)
	c.Add(store.Outcome{ID: 1, Fence: 1, State: store.StateCompleted}, func(ok bool) { written <- ok })
	if !c.Holds(1, 1) || c.Holds(1, 2) || c.Holds(2, 1) {
		t.Fatal("Holds does not name exactly the waiting outcome")
	}
	runCtx, stop := context.WithCancel(t.Context())
	defer stop()
	go c.Run(runCtx, nil)
	<-b.entered
	if !c.Holds(1, 1) {
		t.Fatal("Holds(1, 1) = false while its outcome is being written")
	}
	close(b.release)
	<-written
	for c.Pending() > 0 { // written, and the write's accounting done right after
		runtime.Gosched()
	}
	if c.Holds(1, 1) {
		t.Fatal("Holds(1, 1) = true once its outcome is written")
	}
}

// firstBlocks holds its first Complete call until release is closed, as a store settling a
// large fan-out's dependents holds the completion that released them; later calls go through.
type firstBlocks struct {
	store.Store
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (b *firstBlocks) Complete(ctx context.Context, outcomes []store.Outcome) ([]bool, error) {
	if b.calls.Add(1) == 1 {
		close(b.entered)
		<-b.release
	}
	return b.Store.Complete(ctx, outcomes)
}

// A whole batch of outcomes does not wait for a write that takes long: a second write carries it
// while the first is still in flight.
func TestFullBatchDoesNotWaitForALongWrite(t *testing.T) {
	st, jobs := running(t, filepath.Join(t.TempDir(), "rota.db"), BatchMax+1)
	b := &firstBlocks{Store: st, entered: make(chan struct{}), release: make(chan struct{})}
	c := New(b, clockwork.NewFakeClock(), logged(t))
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go c.Run(ctx, nil)
	outcome := func(j *store.JobRow) store.Outcome {
		return store.Outcome{ID: j.ID, Fence: j.Fence, State: store.StateCompleted}
	}
	first := make(chan bool, 1)
	c.Add(outcome(jobs[0]), func(ok bool) { first <- ok })
	<-b.entered
	written := make(chan bool, BatchMax)
	for _, j := range jobs[1:] {
		c.Add(outcome(j), func(ok bool) { written <- ok })
	}
	for range BatchMax {
		select {
		case ok := <-written:
			if !ok {
				t.Fatal("an outcome of the second write was not applied")
			}
		case <-time.After(10 * time.Second): // a failure's bound, not a wait for success
			t.Fatalf("the second batch waited for the first write: %d outcomes pending", c.Pending())
		}
	}
	select {
	case <-first:
		t.Fatal("the first outcome was written before its write was let go")
	default: // still in flight, as it must be: only release lets it go
	}
	close(b.release)
	if !<-first {
		t.Fatal("the first outcome was not applied")
	}
}

// While a write is in flight, a second one takes only a whole batch: less than that waits for
// the first, so that a busy node keeps writing large batches; and no third one starts.
func TestSecondWriteTakesOnlyAWholeBatch(t *testing.T) {
	c := New(nil, clockwork.NewFakeClock(), nil)
	c.pending = make([]item, BatchMax-1)
	if batch, _, _ := c.take(); len(batch) != BatchMax-1 {
		t.Fatalf("the first write took %d outcomes, want %d", len(batch), BatchMax-1)
	}
	c.pending = make([]item, BatchMax-1)
	if batch, _, _ := c.take(); len(batch) != 0 {
		t.Fatalf("with a write in flight, %d outcomes (less than a batch) were taken", len(batch))
	}
	c.pending = make([]item, BatchMax+5)
	if batch, _, _ := c.take(); len(batch) != BatchMax {
		t.Fatalf("the second write took %d outcomes, want a whole batch of %d", len(batch), BatchMax)
	}
	if batch, _, _ := c.take(); len(batch) != 0 {
		t.Fatalf("a third write took %d outcomes while two were in flight", len(batch))
	}
	if n := c.Pending(); n != BatchMax-1+BatchMax+5 {
		t.Fatalf("Pending = %d, want every outcome taken or waiting", n)
	}
}

// Without a drain channel Run writes until its context ends: finding nothing pending at its
// start does not end it, and an outcome added later is written.
func TestRunWithoutDrainOutlastsAnIdleStart(t *testing.T) {
	st, jobs := running(t, filepath.Join(t.TempDir(), "rota.db"), 1)
	c := New(st, clockwork.NewFakeClock(), logged(t))
	ctx, stop := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() {
		c.Run(ctx, nil)
		close(returned)
	}()
	written := make(chan bool, 1)
	c.Add(store.Outcome{ID: jobs[0].ID, Fence: jobs[0].Fence, State: store.StateCompleted}, func(ok bool) { written <- ok })
	select {
	case ok := <-written:
		if !ok {
			t.Fatal("the outcome was not applied")
		}
	case <-returned:
		t.Fatal("Run returned with its context live")
	case <-time.After(10 * time.Second): // a failure's bound, not a wait for success
		t.Fatal("the outcome was never written")
	}
	select {
	case <-returned:
		t.Fatal("Run returned with its context live")
	default:
	}
	stop()
	<-returned
}

// refusingJob is a store that refuses every write carrying an outcome of job id, whatever the
// outcome holds: a refusal no stripping cures.
type refusingJob struct {
	store.Store
	id int64
}

func (r refusingJob) Complete(ctx context.Context, outcomes []store.Outcome) ([]bool, error) {
	for _, o := range outcomes {
		if o.ID == r.id {
			return nil, errors.New("row is malformed")
		}
	}
	return r.Store.Complete(ctx, outcomes)
}

// An outcome the store keeps refusing after it was stripped is retried, but after the outcomes
// of its batch that the store takes: one job the store cannot record does not leave the others
// running under the node's heartbeat.
func TestOutcomeRefusedWhenStrippedHoldsNothingBack(t *testing.T) {
	ctx := context.Background()
	st, jobs := running(t, filepath.Join(t.TempDir(), "rota.db"), 3)
	clock := clockwork.NewFakeClock()
	bad := jobs[0]
	c := New(refusingJob{st, bad.ID}, clock, logged(t))
	results := make(chan int64, 3)
	for _, j := range jobs {
		c.Add(store.Outcome{ID: j.ID, Fence: j.Fence, State: store.StateCompleted}, func(bool) { results <- j.ID })
	}
	runWithoutWaits(t, c, clock)
	for range 2 {
		select {
		case id := <-results:
			if id == bad.ID {
				t.Fatal("the outcome the store refuses was reported settled")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the outcomes the store takes were not recorded within 10s: the refused one held them back")
		}
	}
	for _, j := range jobs[1:] {
		if row, _ := st.Get(ctx, j.ID); row.State != store.StateCompleted {
			t.Errorf("job %d is %s, want completed", j.ID, row.State)
		}
	}
	if row, _ := st.Get(ctx, bad.ID); row.State != store.StateRunning {
		t.Errorf("the refused outcome's job is %s, want running: its outcome is still being retried", row.State)
	}
	if c.Pending() == 0 {
		t.Error("Pending() = 0: the refused outcome is still being written")
	}
}
