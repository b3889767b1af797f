package rota

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/internal/leader"
	"github.com/rotahq/rota/internal/syncbuf"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

// A claim says what it asked and got, and each job it brings starts with the time it waited since
// it was due: here its run-at, 2 s before the poll that found it.
func TestClaimedAndStartedEvents(t *testing.T) {
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error { return nil }, nil)
	job := b.insert(t, testArgs{}, &InsertOpts{RunAt: epoch.Add(10 * time.Second)})
	b.clock.Advance(12 * time.Second)
	var claimed Event
	for claimed.Claim.Got == 0 {
		claimed = b.event(t, EventJobClaimed)
	}
	if claimed.Queue != QueueDefault || claimed.Claim.Got != 1 || claimed.Claim.Asked < 1 {
		t.Fatalf("claimed %+v", claimed)
	}
	started := b.event(t, EventJobStarted)
	if started.Job.ID != job.ID || started.Latency != 2*time.Second {
		t.Fatalf("started job %d with latency %v; want job %d, 2s", started.Job.ID, started.Latency, job.ID)
	}
	b.event(t, EventJobCompleted)
}

// refusingStore answers every outcome as refused for a stale fence.
type refusingStore struct{ store.Store }

func (s refusingStore) Complete(ctx context.Context, outcomes []store.Outcome) ([]bool, error) {
	return make([]bool, len(outcomes)), nil
}

// An outcome the store refuses is not the job's outcome: it is a job.fence_refused event with
// what the attempt wanted.
func TestFenceRefusedEvent(t *testing.T) {
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error { return nil },
		func(c *Config) { c.Store = refusingStore{c.Store} })
	job := b.insert(t, testArgs{}, nil)
	b.clock.Advance(FetchPollIntervalDefault) // the wrapper hides the store's notifications
	ev := b.event(t, EventJobFenceRefused)
	if ev.Job.ID != job.ID || ev.Outcome != StateCompleted {
		t.Fatalf("fence refused %+v", ev)
	}
}

// failingClaims fails claims while down is set.
type failingClaims struct {
	store.Store
	down *atomic.Bool
}

func (s failingClaims) Claim(ctx context.Context, p store.ClaimParams) ([]*store.JobRow, error) {
	if s.down.Load() {
		return nil, errors.New("connection refused")
	}
	return s.Store.Claim(ctx, p)
}

// A failed claim is a store.error naming the call and the queue.
// failingCompletes is a store whose Complete fails while down is set.
type failingCompletes struct {
	*sqlite.Store
	down *atomic.Bool
}

func (s failingCompletes) Complete(ctx context.Context, o []store.Outcome) ([]bool, error) {
	if s.down.Load() {
		return nil, errors.New("connection refused")
	}
	return s.Store.Complete(ctx, o)
}

// A write of outcomes that fails is a store.error event that says how many outcomes it carried
// and what the node does next; the outcome is written once the store is back.
func TestFailedCompleteIsAnEvent(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	b := setup(t, func(context.Context, *Job[testArgs]) error { return nil },
		func(c *Config) { c.Store = failingCompletes{Store: c.Store.(*sqlite.Store), down: &down} })
	b.insert(t, testArgs{}, nil)
	ev := b.event(t, EventStoreError)
	if ev.Op != "complete" || ev.Count != 1 || ev.Reason != "retry" || ev.Error != "connection refused" {
		t.Fatalf("store error %+v", ev)
	}
	down.Store(false)
	// The event is sent before the completer waits out its backoff: advance only once that wait
	// is on the clock, or the advance passes before it and the outcome is never retried.
	b.timers(t, baseTimers(b.node)+1)
	b.clock.Advance(time.Minute) // past the completer's backoff
	b.event(t, EventJobCompleted)
}

// Stop does not outlast its caller's deadline while an outcome waits for a store that refuses
// it: the outcome is left to the rescuer.
func TestStopEndsWhileCompletesFail(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	var watch *graceWatch
	b := setup(t, func(context.Context, *Job[testArgs]) error { return nil },
		func(c *Config) {
			c.Store = failingCompletes{Store: c.Store.(*sqlite.Store), down: &down}
			watch = &graceWatch{Clock: c.Clock, grace: c.TimeoutGrace, waiting: make(chan struct{})}
			c.Clock = watch
		})
	b.insert(t, testArgs{}, nil)
	b.event(t, EventStoreError)
	// The caller's deadline passes once Stop waits for the outcome, not after a span of real
	// time: a deadline already past when Stop got there would leave the outcome the grace,
	// on a fake clock that never reaches it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- b.node.Stop(ctx) }()
	recv(t, watch.waiting)
	cancel()
	if err := recv(t, stopped); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if ev := b.event(t, EventOutcomesUnrecorded); ev.Count != 1 || ev.Reason != "deadline" {
		t.Fatalf("unrecorded outcomes %+v; want the one, left at the deadline", ev)
	}
	b.event(t, EventNodeStopped)
}

// A leader service that starts says so with the lease's token; one that cannot start says why.
func TestServiceStateEvents(t *testing.T) {
	b := setup(t, nil, func(c *Config) {
		c.Leader.Services = []LeaderService{refusingService{}}
	})
	var pruner, refused bool
	for !pruner || !refused {
		ev := b.event(t, EventServiceState)
		switch ev.Service {
		case ServicePruner:
			pruner = ev.Reason == leader.ServiceStarted
		case "refusing":
			if ev.Reason != leader.ServiceStartFailed || ev.Error != "not today" {
				t.Fatalf("the refusing service: %+v", ev)
			}
			refused = true
		}
	}
}

// A synchronous handler may act on a leader service's state: one that asks for the restart of a
// service that failed to start is called outside the services' lock, and the node goes on.
func TestServiceStateHandlerMayRestartTheService(t *testing.T) {
	handled := make(chan struct{}, 1)
	setupWith(t, nil, func(c *Config) { c.Leader.Services = []LeaderService{refusingService{}} }, func(n *Node) {
		n.Handle(func(ev Event) {
			if ev.Type == EventServiceState && ev.Reason == leader.ServiceStartFailed {
				n.RestartLeaderService(ev.Service)
				select {
				case handled <- struct{}{}:
				default:
				}
			}
		})
	})
	recv(t, handled)
}

// refusingService is a leader service that never starts.
type refusingService struct{}

func (refusingService) Name() string                { return "refusing" }
func (refusingService) Start(context.Context) error { return errors.New("not today") }
func (refusingService) Stop(context.Context) error  { return nil }

func TestStoreErrorEvent(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	b := setup(t, nil, func(c *Config) { c.Store = failingClaims{Store: c.Store, down: &down} })
	ev := b.event(t, EventStoreError)
	if ev.Op != "claim" || ev.Queue != QueueDefault || ev.Error != "connection refused" {
		t.Fatalf("store error %+v", ev)
	}
}

// Each maintenance service says it ran and what it did: the cron planner the occurrences it
// planned, the pruner the jobs it deleted once their retention passed.
func TestServiceRunEvents(t *testing.T) {
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error { return nil }, func(c *Config) {
		c.Schedules = []Schedule{{Name: "hourly", Expr: "@hourly", Args: testArgs{}}}
	})
	seen := map[string]bool{}
	for !seen[ServiceRescuer] || !seen[ServiceRegistry] || !seen[ServicePruner] || !seen[ServiceCron] {
		ev := b.event(t, EventServiceRun)
		if ev.Error != "" {
			t.Fatalf("%s failed: %s", ev.Service, ev.Error)
		}
		seen[ev.Service] = true
	}
	b.insert(t, testArgs{}, nil)
	b.event(t, EventJobCompleted)
	b.timers(t, baseTimers(b.node))
	b.clock.Advance(25 * time.Hour)
	did := map[string]int{}
	for did[ServiceCron] == 0 || did[ServicePruner] == 0 {
		ev := b.event(t, EventServiceRun)
		did[ev.Service] += ev.Count
	}
	if did[ServiceCron] != 1 {
		t.Fatalf("cron planned %d occurrences; want the one catch-up job for the missed ones", did[ServiceCron])
	}
	if did[ServicePruner] != 1 {
		t.Fatalf("pruner deleted %d jobs; want the one completed 25 h ago", did[ServicePruner])
	}
}

// Handlers see every event, in order, even those a full subscription drops.
func TestHandlersMissNothing(t *testing.T) {
	const jobs = 150
	var (
		mu        sync.Mutex
		completed int
		order     []EventType
	)
	done := make(chan struct{})
	clock := clockwork.NewFakeClockAt(epoch)
	st := openStore(t, clock)
	workers := NewWorkers()
	AddWorker(workers, WorkFunc[testArgs](func(ctx context.Context, j *Job[testArgs]) error { return nil }), nil)
	cfg := Config{Store: st, Workers: workers, Clock: clock, ID: "node-a", Logger: testLogger(t), Leader: LeaderConfig{Standalone: true}}
	b := startBundle(t, st, clock, cfg, func(n *Node) {
		n.Handle(func(ev Event) {
			mu.Lock()
			defer mu.Unlock()
			if ev.Job == nil || ev.Type == EventJobClaimed {
				return
			}
			order = append(order, ev.Type)
			if ev.Type == EventJobCompleted {
				if completed++; completed == jobs {
					close(done)
				}
			}
		})
	})
	for range jobs {
		b.insert(t, testArgs{}, nil)
	}
	recv(t, done)
	mu.Lock()
	defer mu.Unlock()
	inFlight := 0
	for _, typ := range order {
		switch typ {
		case EventJobStarted:
			inFlight++
		case EventJobCompleted:
			inFlight--
		}
		if inFlight < 0 {
			t.Fatal("a job's outcome came before its start")
		}
	}
}

// A store refusing every claim is logged once, again when the reason changes or a minute has
// passed, and once more when claims work again: not a line per poll.
func TestStoreErrorsAreNotRepeatedEveryPoll(t *testing.T) {
	var log bytes.Buffer
	clock := clockwork.NewFakeClockAt(epoch)
	l := newEventLog(slog.New(slog.NewTextHandler(&log, nil)), clock)
	lines := func() []string { return strings.Split(strings.TrimSpace(log.String()), "\n") }
	fail := func(reason string) {
		l.log(Event{Type: EventStoreError, Op: "claim", Queue: "mail", Error: reason})
	}
	for range 100 {
		fail("namespace is not migrated")
		clock.Advance(100 * time.Millisecond)
	}
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], "level=WARN") || !strings.Contains(got[0], "failures=1") {
		t.Fatalf("100 failures for one reason within 10 s logged:\n%s", log.String())
	}
	fail("connection refused")
	if got := lines(); len(got) != 2 || !strings.Contains(got[1], "connection refused") || !strings.Contains(got[1], "failures=101") {
		t.Fatalf("a new reason is not logged with the count:\n%s", log.String())
	}
	clock.Advance(storeErrorRepeat)
	fail("connection refused")
	if got := lines(); len(got) != 3 {
		t.Fatalf("the same reason a minute later is not logged again:\n%s", log.String())
	}
	claimed := Event{Type: EventJobClaimed, Queue: "mail"}
	l.log(claimed)
	l.log(claimed)
	if got := lines(); len(got) != 4 || !strings.Contains(got[3], "works again") || !strings.Contains(got[3], "failures=102") {
		t.Fatalf("recovery is not said once:\n%s", log.String())
	}
	fail("namespace is not migrated")
	if got := lines(); len(got) != 5 || !strings.Contains(got[4], "failures=1") {
		t.Fatalf("a failure after the recovery starts a new count:\n%s", log.String())
	}
}

// Events are logged at their level: a failed attempt at info, a discarded job and a refused
// outcome at warn, a service run that did something at info, one that did nothing at debug.
func TestEventLogLevels(t *testing.T) {
	var log bytes.Buffer
	l := newEventLog(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})), clockwork.NewFakeClockAt(epoch))
	job := &JobRow{}
	job.ID, job.Kind = 7, "test"
	for _, c := range []struct {
		ev    Event
		level string
	}{
		{Event{Type: EventJobFailed, Job: job, Error: "boom"}, "INFO"},
		{Event{Type: EventJobDiscarded, Job: job, Error: "boom"}, "WARN"},
		{Event{Type: EventJobFenceRefused, Job: job, Outcome: StateCompleted}, "WARN"},
		{Event{Type: EventServiceRun, Service: ServicePruner, Count: 3}, "INFO"},
		{Event{Type: EventServiceRun, Service: ServicePruner}, "DEBUG"},
		{Event{Type: EventJobStarted, Job: job}, "DEBUG"},
		{Event{Type: EventServiceRun, Service: ServiceStats, Count: 3}, "DEBUG"},
		{Event{Type: EventLeaderElected, Token: 4}, "INFO"},
		{Event{Type: EventLeaderLost, Reason: "lease taken by b"}, "WARN"},
		{Event{Type: EventLeaderLost, Reason: leader.ReasonStopping}, "INFO"},
		{Event{Type: EventSingletonLost, Reason: "nightly: " + leader.ReasonStopping}, "INFO"},
		{Event{Type: EventStoreError, Op: "complete", Count: 2, Reason: "retry", Error: "down"}, "WARN"},
		{Event{Type: EventStoreReset, Reason: "store identity changed from a to b"}, "ERROR"},
		{Event{Type: EventOutcomesUnrecorded, Count: 2, Reason: "grace"}, "ERROR"},
		{Event{Type: EventNodeStarted, Count: 1, Kinds: []string{"test"}}, "INFO"},
		{Event{Type: EventNodeStopped}, "INFO"},
		{Event{Type: EventServiceState, Service: ServicePruner, Reason: leader.ServiceStarted, Token: 3}, "INFO"},
		{Event{Type: EventServiceState, Service: ServicePruner, Reason: leader.ServiceRestarting}, "INFO"},
		{Event{Type: EventServiceState, Service: "x", Reason: leader.ServiceStartFailed, Error: "no"}, "ERROR"},
		{Event{Type: EventServiceState, Service: "x", Reason: leader.ServiceStopFailed, Error: "no"}, "ERROR"},
		{Event{Type: EventMemoryUnreadable, Error: "unsupported"}, "WARN"},
	} {
		log.Reset()
		l.log(c.ev)
		if !strings.Contains(log.String(), "level="+c.level) {
			t.Errorf("%s logged %q, want level %s", c.ev.Type, log.String(), c.level)
		}
	}
}

// A node that runs a job and stops normally logs no warning or error.
func TestNormalStopLogsNoWarning(t *testing.T) {
	var log syncbuf.Buffer
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error { return nil }, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	b.insert(t, testArgs{}, nil)
	b.event(t, EventJobCompleted)
	if err := b.node.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := log.String(); s != "" {
		t.Fatalf("a normal run and stop logged:\n%s", s)
	}
}

// graceWatch is a node's clock that says when the node starts waiting out its grace (an After
// of that length), so a test can act once the node waits, whatever the machine's speed.
type graceWatch struct {
	clockwork.Clock
	grace   time.Duration
	once    sync.Once
	waiting chan struct{}
}

func (g *graceWatch) After(d time.Duration) <-chan time.Time {
	ch := g.Clock.After(d)
	if d == g.grace {
		g.once.Do(func() { close(g.waiting) })
	}
	return ch
}
