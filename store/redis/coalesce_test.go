package redis

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/rotahq/rota/store"
)

// gate is an insert function whose calls block until released, recording what each carried.
type gate struct {
	mu      sync.Mutex
	calls   [][]string    // the kinds of each call, in order
	started chan gateCall // one per call, as it starts
}

// gateCall is a call of a gate: its number (from 1) and what lets it return.
type gateCall struct {
	n       int
	release chan error
}

func newGate() *gate { return &gate{started: make(chan gateCall, 16)} }

func (g *gate) do(_ context.Context, ps []store.InsertParams) ([]store.InsertResult, error) {
	var kinds []string
	for _, p := range ps {
		kinds = append(kinds, p.Kind)
	}
	g.mu.Lock()
	g.calls = append(g.calls, kinds)
	n := len(g.calls)
	g.mu.Unlock()
	release := make(chan error)
	g.started <- gateCall{n, release}
	if err := <-release; err != nil {
		return nil, err
	}
	out := make([]store.InsertResult, len(ps))
	for i, p := range ps {
		out[i] = store.InsertResult{Job: &store.JobRow{Kind: p.Kind}}
	}
	return out, nil
}

type reply struct {
	kinds []string
	err   error
}

func insertAsync(ctx context.Context, c *coalescer, kinds ...string) <-chan reply {
	ch := make(chan reply, 1)
	go func() {
		var ps []store.InsertParams
		for _, k := range kinds {
			ps = append(ps, store.InsertParams{Kind: k})
		}
		res, err := c.insert(ctx, ps)
		var got []string
		for _, r := range res {
			got = append(got, r.Job.Kind)
		}
		ch <- reply{got, err}
	}()
	return ch
}

// waitQueued waits until n calls wait in c.next: the test's own synchronisation, no sleeps.
func waitQueued(t *testing.T, c *coalescer, n int) {
	t.Helper()
	for {
		c.mu.Lock()
		q := len(c.next)
		c.mu.Unlock()
		if q == n {
			return
		}
		if q > n {
			t.Fatalf("%d calls queued, want %d", q, n)
		}
		runtimeGosched()
	}
}

// twoInFlight is a coalescer on a gate that lets two groups fly, with calls a and b sent and
// held: the most in flight, so the next calls wait.
func twoInFlight(ctx context.Context) (g *gate, c *coalescer, a <-chan reply, ga gateCall, b <-chan reply, gb gateCall) {
	g = newGate()
	c = &coalescer{do: g.do, limit: 2}
	a = insertAsync(ctx, c, "a")
	ga = <-g.started
	b = insertAsync(ctx, c, "b")
	gb = <-g.started
	return g, c, a, ga, b, gb
}

func TestCoalescerGroupsWaitingCallsInOrder(t *testing.T) {
	ctx := context.Background()
	// Two groups go at once (the limit); the calls behind them wait and go together.
	g, c, a, ga, b, gb := twoInFlight(ctx)
	c1 := insertAsync(ctx, c, "c1", "c2")
	waitQueued(t, c, 1)
	d := insertAsync(ctx, c, "d")
	waitQueued(t, c, 2)

	ga.release <- nil // a returns; its sender hands the next group to c1's call
	if r := <-a; r.err != nil || fmt.Sprint(r.kinds) != "[a]" {
		t.Fatalf("a: %v", r)
	}
	gc := <-g.started
	if gc.n != 3 {
		t.Fatalf("call %d started, want the 3rd", gc.n)
	}
	gb.release <- nil
	gc.release <- nil
	if r := <-b; r.err != nil || fmt.Sprint(r.kinds) != "[b]" {
		t.Fatalf("b: %v", r)
	}
	if r := <-c1; r.err != nil || fmt.Sprint(r.kinds) != "[c1 c2]" {
		t.Fatalf("c: %v", r)
	}
	if r := <-d; r.err != nil || fmt.Sprint(r.kinds) != "[d]" {
		t.Fatalf("d: %v", r)
	}
	if got := fmt.Sprint(g.calls); got != "[[a] [b] [c1 c2 d]]" {
		t.Fatalf("calls %s", got)
	}
	if c.inflight != 0 || len(c.next) != 0 {
		t.Fatalf("left inflight=%d queued=%d", c.inflight, len(c.next))
	}
}

func TestCoalescerWithdrawsACancelledWaiterAndSharesErrors(t *testing.T) {
	ctx := context.Background()
	g, c, a, ga, b, gb := twoInFlight(ctx)
	cctx, cancel := context.WithCancel(ctx)
	gone := insertAsync(cctx, c, "gone")
	waitQueued(t, c, 1)
	x := insertAsync(ctx, c, "x")
	waitQueued(t, c, 2)
	y := insertAsync(ctx, c, "y")
	waitQueued(t, c, 3)
	cancel()
	if r := <-gone; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", r)
	}
	waitQueued(t, c, 2)

	boom := errors.New("boom")
	ga.release <- nil
	<-a
	gxy := <-g.started
	gb.release <- nil
	<-b
	gxy.release <- boom
	rx, ry := <-x, <-y
	if !errors.Is(rx.err, boom) || !errors.Is(ry.err, boom) {
		t.Fatalf("group error not shared: %v %v", rx, ry)
	}
	if got := fmt.Sprint(g.calls); got != "[[a] [b] [x y]]" {
		t.Fatalf("calls %s: the cancelled call was sent", got)
	}
}

// TestConcurrentInsertsKeepTheirOwnJobs inserts from many goroutines at once on a real Redis:
// every call gets back its own jobs, and one unique key has one holder however calls group.
func TestConcurrentInsertsKeepTheirOwnJobs(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	var mu sync.Mutex
	ids := map[int64]bool{}
	holders := 0
	for w := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				args := fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)
				p := store.InsertParams{Kind: "k", Queue: "q", Args: []byte(args), MaxAttempts: 1}
				u := store.InsertParams{Kind: "k", Queue: "q", Args: []byte(`{}`), MaxAttempts: 1, UniqueKey: "one"}
				res, err := s.Insert(ctx, []store.InsertParams{p, u})
				if err != nil {
					errs <- err
					return
				}
				if len(res) != 2 || string(res[0].Job.Args) != args || res[0].Duplicate {
					errs <- fmt.Errorf("worker %d insert %d got %+v", w, i, res[0])
					return
				}
				mu.Lock()
				if ids[res[0].Job.ID] {
					errs <- fmt.Errorf("id %d twice", res[0].Job.ID)
				}
				ids[res[0].Job.ID] = true
				if !res[1].Duplicate {
					holders++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if holders != 1 {
		t.Fatalf("unique key inserted %d times", holders)
	}
	st, err := s.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var avail int64
	for _, q := range st {
		avail += q.Counts[store.StateAvailable]
	}
	if avail != 1001 {
		t.Fatalf("%d available jobs, want 1001", avail)
	}
}

func runtimeGosched() { runtime.Gosched() }
