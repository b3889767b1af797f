package leader

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type bundle struct {
	clock *clockwork.FakeClock
	path  string
	store *sqlite.Store
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{clock: clockwork.NewFakeClockAt(epoch), path: filepath.Join(t.TempDir(), "rota.db")}
	b.store = b.open(t)
	return b
}

// open returns another handle on the same file: each elector gets its own, as separate processes
// would have.
func (b *bundle) open(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), b.path, sqlite.WithClock(b.clock), sqlite.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func (b *bundle) elector(t *testing.T, owner string, st *sqlite.Store, changes *[]Change) *Elector {
	t.Helper()
	e, err := New(Config{
		Leaser: st, Identity: st.Identity, Owner: owner, Clock: b.clock,
		Logger:   slog.New(slog.NewTextHandler(t.Output(), nil)),
		OnChange: func(c Change) { *changes = append(*changes, c) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// The tests drive rounds by hand, in virtual time, as Run's timers would: followers every
// TryEvery, the leader every RenewEvery, and expire at the renew deadline.

func TestOneLeaderAtATime(t *testing.T) {
	b := setup(t)
	var changes []Change
	ctx := context.Background()
	a := b.elector(t, "a", b.open(t), &changes)
	c := b.elector(t, "c", b.open(t), &changes)
	a.round(ctx)
	c.round(ctx)
	if la, _ := a.Leader(); !la {
		t.Fatal("first to try does not lead")
	}
	if lc, _ := c.Leader(); lc {
		t.Fatal("second leads while the first holds the lease")
	}
	for range 10 {
		b.clock.Advance(RenewEveryDefault)
		a.round(ctx)
		c.round(ctx)
		la, _ := a.Leader()
		lc, _ := c.Leader()
		if !la || lc {
			t.Fatalf("at %v: a leads %v, c leads %v", b.clock.Since(epoch), la, lc)
		}
	}
}

func TestDeadLeaderIsReplacedWithinTTLPlusOneTry(t *testing.T) {
	b := setup(t)
	var changes []Change
	ctx := context.Background()
	dead := b.elector(t, "dead", b.open(t), &changes)
	dead.round(ctx)
	_, deadToken := dead.Leader()
	died := b.clock.Now() // it never renews again: SIGKILL

	next := b.elector(t, "next", b.open(t), &changes)
	for {
		b.clock.Advance(time.Second)
		if b.clock.Since(died)%TryEveryDefault == 0 {
			next.round(ctx)
		}
		if leading, token := next.Leader(); leading {
			took := b.clock.Since(died)
			if took > TTLDefault+TryEveryDefault {
				t.Fatalf("took over after %v, want at most TTL + one try (%v)", took, TTLDefault+TryEveryDefault)
			}
			if token <= deadToken {
				t.Fatalf("new token %d not above the dead leader's %d", token, deadToken)
			}
			t.Logf("failover after %v of virtual time", took)
			return
		}
		if b.clock.Since(died) > time.Hour {
			t.Fatal("nobody took over within an hour")
		}
	}
}

func TestLeaderThatCannotRenewStepsDownBeforeTheLeaseCanPass(t *testing.T) {
	b := setup(t)
	var changes []Change
	ctx := context.Background()
	cut := b.open(t)
	leader := b.elector(t, "cut-off", cut, &changes)
	other := b.elector(t, "other", b.open(t), &changes)
	leader.round(ctx)
	cut.Close() // from now on every renewal fails, as if the network were gone

	var steppedDown, tookOver time.Time
	for steppedDown.IsZero() || tookOver.IsZero() {
		b.clock.Advance(time.Second)
		since := b.clock.Since(epoch)
		if since%RenewEveryDefault == 0 {
			leader.round(ctx)
			other.round(ctx)
		}
		if l, _ := leader.Leader(); l && !b.clock.Now().Before(leader.deadline) {
			leader.expire() // Run's deadline timer
		}
		if l, _ := leader.Leader(); !l && steppedDown.IsZero() {
			steppedDown = b.clock.Now()
		}
		if l, _ := other.Leader(); l && tookOver.IsZero() {
			tookOver = b.clock.Now()
			if steppedDown.IsZero() {
				t.Fatalf("the other node leads at %v while the cut-off one still acts", since)
			}
		}
		if since > time.Hour {
			t.Fatal("no handover within an hour")
		}
	}
	if d := steppedDown.Sub(epoch); d != TTLDefault-RenewEveryDefault/2 {
		t.Errorf("stepped down after %v, want the renew deadline %v", d, TTLDefault-RenewEveryDefault/2)
	}
	if !tookOver.After(epoch.Add(TTLDefault)) {
		t.Errorf("took over at %v, before the lease could expire", tookOver.Sub(epoch))
	}
}

func TestStoreResetMakesTheLeaderStepDown(t *testing.T) {
	b := setup(t)
	var changes []Change
	ctx := context.Background()
	e := b.elector(t, "a", b.store, &changes)
	e.round(ctx)
	// The store is recreated: a new identity behind the same address (a restored backup, a
	// flushed Redis).
	fresh, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "new.db"), sqlite.WithClock(b.clock))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	e.cfg.Identity = fresh.Identity
	b.clock.Advance(RenewEveryDefault)
	e.round(ctx)
	if l, _ := e.Leader(); l {
		t.Fatal("still leads on a store whose identity changed")
	}
	if last := changes[len(changes)-1]; last.Leader || !strings.Contains(last.Reason, "store identity changed") {
		t.Fatalf("last change %+v", last)
	}
}

// flaky fails its first start, as a service whose dependency is not up yet.
type flaky struct {
	starts, stops atomic.Int32
}

func (f *flaky) Name() string { return "flaky" }
func (f *flaky) Start(ctx context.Context) error {
	if f.starts.Add(1) == 1 {
		return errors.New("not yet")
	}
	if token, ok := TokenFrom(ctx); !ok || token < 1 {
		return errors.New("started without the lease token")
	}
	return nil
}
func (f *flaky) Stop(ctx context.Context) error { f.stops.Add(1); return nil }

func TestFailedServiceStartIsRetriedAtTheNextRenewal(t *testing.T) {
	b := setup(t)
	var changes []Change
	ctx := context.Background()
	e := b.elector(t, "a", b.store, &changes)
	svc := &flaky{}
	e.Add(svc)
	e.round(ctx)
	if svc.starts.Load() != 1 || len(e.services.running) != 0 {
		t.Fatalf("after first round: starts %d, running %v", svc.starts.Load(), e.services.running)
	}
	b.clock.Advance(RenewEveryDefault)
	e.round(ctx)
	if svc.starts.Load() != 2 || len(e.services.running) != 1 {
		t.Fatalf("after renewal: starts %d, running %v", svc.starts.Load(), e.services.running)
	}
	e.Restart("flaky")
	leading, token := e.Leader()
	e.services.restartPending(ctx, leading, token)
	if svc.stops.Load() != 1 || svc.starts.Load() != 3 {
		t.Fatalf("restart: stops %d starts %d", svc.stops.Load(), svc.starts.Load())
	}
	e.stepDown("test")
	if svc.stops.Load() != 2 || len(e.services.running) != 0 {
		t.Fatalf("step down: stops %d running %v", svc.stops.Load(), e.services.running)
	}
}

// TestRunElectsAndHandsOver runs the real loops on the real clock with short durations: three
// electors, the leader stops, another takes over; never two at once.
func TestRunElectsAndHandsOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rota.db")
	var (
		mu      sync.Mutex
		leaders = map[string]bool{}
		overlap bool
		elected = make(chan string, 10)
	)
	cancels := map[string]context.CancelFunc{}
	var wg sync.WaitGroup
	for _, owner := range []string{"a", "b", "c"} {
		st, err := sqlite.Open(context.Background(), path, sqlite.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		e, err := New(Config{
			Leaser: st, Identity: st.Identity, Owner: owner,
			// The hand-over is a release, taken within one try; a TTL far above the renewals keeps
			// a loaded machine's slow renewals from ending a term mid-test on a timer.
			TTL: 10 * time.Second, RenewEvery: 150 * time.Millisecond, TryEvery: 100 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
			OnChange: func(c Change) {
				mu.Lock()
				defer mu.Unlock()
				leaders[owner] = c.Leader
				n := 0
				for _, l := range leaders {
					if l {
						n++
					}
				}
				overlap = overlap || n > 1
				if c.Leader {
					elected <- owner
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancels[owner] = cancel
		wg.Add(1)
		go func() { defer wg.Done(); e.Run(ctx) }()
	}
	first := waitElected(t, elected)
	cancels[first]() // a clean stop releases the lease: the next takes over within one try
	second := waitElected(t, elected)
	if second == first {
		t.Fatalf("%s re-elected after stopping", first)
	}
	for _, cancel := range cancels {
		cancel()
	}
	wg.Wait()
	if overlap {
		t.Fatal("two electors led at once")
	}
}

func waitElected(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case owner := <-ch:
		return owner
	case <-time.After(10 * time.Second):
		t.Fatal("nobody elected within 10s")
		return ""
	}
}

func TestRestartRequestFromAnotherNodeReachesTheLeader(t *testing.T) {
	b := setup(t)
	var changes []Change
	ctx := context.Background()
	e := b.elector(t, "leader", b.store, &changes)
	svc := &flaky{}
	svc.starts.Store(1) // starts cleanly from here on
	e.Add(svc)
	e.round(ctx) // leads, records the restart counters, starts the service
	if err := RequestRestart(ctx, b.open(t), "flaky"); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(RenewEveryDefault)
	e.round(ctx)
	select {
	case <-e.services.restartRequested():
	default:
		t.Fatal("the leader did not notice the restart request at its next renewal")
	}
	leading, token := e.Leader()
	e.services.restartPending(ctx, leading, token)
	if svc.stops.Load() != 1 || svc.starts.Load() != 3 {
		t.Fatalf("restart: stops %d starts %d", svc.stops.Load(), svc.starts.Load())
	}
	b.clock.Advance(RenewEveryDefault)
	e.round(ctx)
	select {
	case <-e.services.restartRequested():
		t.Fatal("one request restarted the service twice")
	default:
	}
}

// handedBack is a lease store that, once, answers a renewal with the lease as it is after
// another owner held it in between: a new token.
type handedBack struct {
	store.Leaser
	once atomic.Bool
}

func (h *handedBack) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (store.Lease, bool, error) {
	l, held, err := h.Leaser.AcquireLease(ctx, name, owner, ttl)
	if err == nil && held && h.once.CompareAndSwap(true, false) {
		l.Token += 100
	}
	return l, held, err
}

// A renewal that comes back with another token means the lease changed hands in between: the
// leader steps down and leads again under the new token, so its services never run under a
// token the store no longer honours.
func TestRenewalWithANewTokenRestartsLeadership(t *testing.T) {
	b := setup(t)
	var changes []Change
	ctx := context.Background()
	leaser := &handedBack{Leaser: b.open(t)}
	e, err := New(Config{Leaser: leaser, Owner: "a", Clock: b.clock, Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
		OnChange: func(c Change) { changes = append(changes, c) }})
	if err != nil {
		t.Fatal(err)
	}
	e.round(ctx)
	_, first := e.Leader()
	leaser.once.Store(true)
	b.clock.Advance(RenewEveryDefault)
	e.round(ctx)
	leading, token := e.Leader()
	if !leading || token != first+100 {
		t.Fatalf("after the renewal: leading %v with token %d, want the new token %d", leading, token, first+100)
	}
	if len(changes) != 3 || changes[1].Leader || !changes[2].Leader || changes[2].Token != token {
		t.Fatalf("changes %+v; want led, stepped down, led again under the new token", changes)
	}
}
