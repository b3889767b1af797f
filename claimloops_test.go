package rota

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

// claimsInFlight is a real SQLite store that asks a node for loops claims in flight per queue,
// and records how many jobs the claims in flight asked for together. When hold is set, the next
// claim's reply is held back, the claim made, until release is closed; held says it is.
type claimsInFlight struct {
	*sqlite.Store
	loops int

	mu            sync.Mutex
	asking, most  int
	began         chan int // each claim's Max as it begins
	hold          bool
	held, release chan struct{}
}

func (c *claimsInFlight) ClaimsInFlight() int { return c.loops }

func (c *claimsInFlight) Claim(ctx context.Context, p store.ClaimParams) ([]*store.JobRow, error) {
	c.mu.Lock()
	c.asking += p.Max
	c.most = max(c.most, c.asking)
	wait := c.hold
	c.hold = false
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.asking -= p.Max
		c.mu.Unlock()
	}()
	if c.began != nil {
		c.began <- p.Max
	}
	rows, err := c.Store.Claim(ctx, p)
	if wait { // its reply travels until released
		close(c.held)
		select {
		case <-c.release:
		case <-ctx.Done():
		}
	}
	return rows, err
}

// holdNext holds the next claim's reply back until release is closed.
func (c *claimsInFlight) holdNext() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hold, c.held, c.release = true, make(chan struct{}), make(chan struct{})
}

// With a store that wants two claims in flight, a slot freed while one claim's reply travels is
// claimed by the node's other loop at once, for what the travelling claim did not ask for.
func TestSecondClaimLoopTakesSlotsFreedMeanwhile(t *testing.T) {
	var cs *claimsInFlight
	const first, second, third = 1, 2, 3
	proceed := map[int]chan struct{}{first: make(chan struct{}), second: make(chan struct{}), third: make(chan struct{})}
	started := make(chan int, 3)
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error {
		started <- j.Args.N
		select {
		case <-proceed[j.Args.N]:
		case <-ctx.Done():
		}
		return nil
	}, func(cfg *Config) {
		cs = &claimsInFlight{Store: cfg.Store.(*sqlite.Store), loops: 2, began: make(chan int, 16)}
		cfg.Store = cs
		cfg.Queues = map[string]QueueConfig{QueueDefault: {MaxWorkers: 2}}
	})
	b.insert(t, testArgs{N: first}, nil)
	if got := recv(t, started); got != first {
		t.Fatalf("job %d started, want the first", got)
	}
	cs.holdNext()
	b.insert(t, testArgs{N: second}, nil)
	recv(t, cs.held) // one loop's claim took the second job; its reply travels
	for len(cs.began) > 0 {
		<-cs.began
	}
	close(proceed[first])
	b.event(t, EventJobCompleted)
	b.insert(t, testArgs{N: third}, nil)
	if asked := recv(t, cs.began); asked != 1 {
		t.Fatalf("the other loop's claim asked for %d jobs, want the 1 slot the waiting claim left", asked)
	}
	if got := recv(t, started); got != third {
		t.Fatalf("job %d started while the claim of the second travels, want the third", got)
	}
	close(cs.release)
	if got := recv(t, started); got != second {
		t.Fatalf("job %d started, want the second", got)
	}
	close(proceed[second])
	close(proceed[third])
	b.event(t, EventJobCompleted)
	b.event(t, EventJobCompleted)
}

// However many loops claim, they never ask together for more jobs than the queue has slots (and
// the jobs a claim may take ahead, at most as many again), never run more handlers than its
// MaxWorkers, and run every job once.
func TestClaimLoopsShareTheSlots(t *testing.T) {
	const slots, jobs = 3, 300
	var cs *claimsInFlight
	var running, most, completed atomic.Int64
	var mu sync.Mutex
	ran := map[int64]int{}
	// Completions are counted by a handler, which sees every event: a subscription drops what
	// its buffer cannot hold, and 300 jobs make some 900 events.
	allCompleted := make(chan struct{})
	counter := func(n *Node) {
		n.Handle(func(e Event) {
			if e.Type == EventJobCompleted && completed.Add(1) == jobs {
				close(allCompleted)
			}
		})
	}
	b := setupWith(t, func(ctx context.Context, j *Job[testArgs]) error {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		mu.Lock()
		ran[j.ID]++
		mu.Unlock()
		running.Add(-1)
		return nil
	}, func(cfg *Config) {
		cs = &claimsInFlight{Store: cfg.Store.(*sqlite.Store), loops: 3}
		cfg.Store = cs
		cfg.Queues = map[string]QueueConfig{QueueDefault: {MaxWorkers: slots}}
	}, counter)
	params := make([]InsertManyParams, jobs)
	for i := range params {
		params[i] = InsertManyParams{Args: testArgs{}}
	}
	if _, err := b.client.InsertMany(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	recv(t, allCompleted)
	if got := most.Load(); got > slots {
		t.Errorf("%d handlers ran at once on a queue of %d slots", got, slots)
	}
	cs.mu.Lock()
	asked := cs.most
	cs.mu.Unlock()
	if asked > 2*slots {
		t.Errorf("claims in flight asked for %d jobs together, want at most %d", asked, 2*slots)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != jobs {
		t.Errorf("%d jobs ran, want %d", len(ran), jobs)
	}
	for id, n := range ran {
		if n != 1 {
			t.Errorf("job %d ran %d times", id, n)
		}
	}
}

// A wake-up that finds every free slot asked for by a claim in flight is not lost: the jobs it
// announces may have come after that claim read the queue, so the claim's return wakes a loop
// again.
func TestWakeDuringAnotherLoopsClaimIsKept(t *testing.T) {
	var cs *claimsInFlight
	started := make(chan int64, 1)
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error {
		started <- j.ID
		return nil
	}, func(cfg *Config) {
		cs = &claimsInFlight{Store: cfg.Store.(*sqlite.Store), loops: 2}
		cs.holdNext() // the first claim, of the empty queue, travels until released
		cfg.Store = cs
		cfg.Queues = map[string]QueueConfig{QueueDefault: {MaxWorkers: 2}}
	})
	recv(t, cs.held)
	job := b.insert(t, testArgs{}, nil) // wakes the other loop, which finds no slot to ask for
	close(cs.release)
	if got := recv(t, started); got != job.ID {
		t.Fatalf("job %d started, want %d", got, job.ID)
	}
}
