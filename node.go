package rota

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rotahq/rota/internal/completer"
	"github.com/rotahq/rota/internal/fleetstats"
	"github.com/rotahq/rota/internal/leader"
	"github.com/rotahq/rota/internal/memory"
	"github.com/rotahq/rota/internal/planner"
	"github.com/rotahq/rota/store"
	"go.opentelemetry.io/otel/trace"
)

// Defaults for Config.
const (
	// QueueMaxWorkersDefault is the concurrency of a queue that does not set its own.
	QueueMaxWorkersDefault = 100
	// JobLeaseDefault is how long a claim holds a job without a heartbeat. The node renews every
	// third of it, so two heartbeats may be lost before the lease lapses; the rescuer then frees
	// the job of a dead node within JobLeaseDefault + RescueIntervalDefault.
	JobLeaseDefault = 15 * time.Second
	// RescueIntervalDefault is how often expired leases are looked for.
	RescueIntervalDefault = 5 * time.Second
	// FetchPollIntervalDefault is how often a queue is polled when no notification arrives: the
	// upper bound of pick-up latency for stores that cannot push, or when a push is lost.
	FetchPollIntervalDefault = time.Second
	// TimeoutGraceDefault is how long a handler that ignores its cancelled context is waited for
	// before it is abandoned and its slot freed.
	TimeoutGraceDefault = 10 * time.Second
	// MaxResultBytesDefault caps a job's recorded result.
	MaxResultBytesDefault = 1 << 20
	// PruneIntervalDefault is how often the leader deletes finished jobs past their retention.
	PruneIntervalDefault = time.Minute
	// TidyIntervalDefault is how often the leader lets a store that has housekeeping of its own
	// (store.Tidier) do it.
	TidyIntervalDefault = time.Second
	// CronIntervalDefault is how often the leader plans cron occurrences; the planner's horizon
	// (CronHorizon) spans several intervals, so a failed pass or two plan nothing late.
	CronIntervalDefault = planner.IntervalDefault
	// RegisterIntervalDefault is how often a node refreshes its row in the node registry.
	RegisterIntervalDefault = 10 * time.Second
	// NodeStaleAfterDefault is how long a node may go unseen before the leader removes its row.
	NodeStaleAfterDefault = 5 * time.Minute
)

// QueueConfig sets how a node serves one queue.
type QueueConfig struct {
	// MaxWorkers is how many jobs of the queue this node runs at once. Defaults to
	// QueueMaxWorkersDefault.
	MaxWorkers int
}

// Config configures a Node. Store and Workers are required; the rest default.
type Config struct {
	Store   store.Store
	Workers *Workers
	// Queues maps queue names to their settings. Defaults to {QueueDefault: {}}.
	Queues map[string]QueueConfig
	// ID names the node in leases and logs; unique per process. Defaults to host-pid-random.
	ID     string
	Clock  clockwork.Clock
	Logger *slog.Logger
	// TracerProvider makes the spans of attempts and of the node's client's inserts (see
	// TraceMetadataKey). Defaults to the global one, otel.GetTracerProvider().
	TracerProvider trace.TracerProvider

	JobLease          time.Duration // Defaults to JobLeaseDefault.
	RescueInterval    time.Duration // Defaults to RescueIntervalDefault.
	FetchPollInterval time.Duration // Defaults to FetchPollIntervalDefault.
	TimeoutGrace      time.Duration // Defaults to TimeoutGraceDefault.
	MaxResultBytes    int           // Defaults to MaxResultBytesDefault.
	MaxArgsBytes      int           // Defaults to MaxArgsBytesDefault.
	PruneInterval     time.Duration // Defaults to PruneIntervalDefault.
	TidyInterval      time.Duration // Defaults to TidyIntervalDefault.
	CronInterval      time.Duration // Defaults to CronIntervalDefault.
	RegisterInterval  time.Duration // Defaults to RegisterIntervalDefault.
	NodeStaleAfter    time.Duration // Defaults to NodeStaleAfterDefault.
	StatsInterval     time.Duration // Defaults to StatsIntervalDefault.
	// Retention says how long finished jobs are kept, per final state.
	Retention Retention
	// Leader tunes the election of the node that runs the pruner, the cron planner and
	// LeaderServices. (Every node rescues expired leases, leader or not.)
	Leader LeaderConfig
	// Version is reported in the node registry. Defaults to "dev".
	Version string
	// MinFreeMemory, in bytes, is the available-memory floor below which the node claims no new
	// jobs (running ones go on). It reopens by itself when memory comes back. 0 turns it off.
	MinFreeMemory uint64
	// availableMemory reads free memory; tests replace it.
	availableMemory func() (uint64, error)
	// Schedules are upserted when the node starts, so schedules can be declared in code. Schedules
	// added at run time (CLI, API) live on; remove them with Client.DeleteSchedule.
	Schedules []Schedule
	// CronHorizon is how far ahead the leader plans occurrences. Defaults to 1 minute, or longer
	// when the leader's lease is: the occurrences a leader that died had planned must last until
	// its successor's first pass (Leader.TTL + Leader.TryEvery + CronInterval later), or those
	// in between count as missed. Set shorter than that, a failover loses them the same way.
	CronHorizon time.Duration
	// Singleton, when set, makes the whole node claim jobs only while it holds the lease of that
	// name: exactly one such node runs fleet-wide; the others wait.
	Singleton string
}

// Node runs jobs: it claims them from its queues, runs each on a runner goroutine (see start)
// under a heartbeated lease, and records outcomes. Create it with NewNode, then Start and Stop it.
type Node struct {
	cfg        Config
	client     *Client
	tracer     tracer
	clock      clockwork.Clock
	logger     *slog.Logger
	queues     []*queue
	kinds      []string
	capacity   int         // the sum of the queues' MaxWorkers
	starved    atomic.Bool // claims stopped because outcomes backed up
	completer  *completer.Completer
	events     eventHub
	elector    *leader.Elector
	singletons singletons
	memFloor   memFloor
	startedAt  time.Time
	counts     *fleetstats.Counter // this node's attempts not yet added to the store; nil if it keeps none

	mu      sync.Mutex
	running map[int64]*execution
	strays  strays

	started     bool
	stopOnce    sync.Once
	stopFetch   chan struct{}   // closed: claim no more
	claimCtx    context.Context // the claims' context, cancelled when Stop runs out of time
	endClaims   context.CancelFunc
	workCtx     context.Context // cancelled with errShutdown when draining runs out of time
	stopWork    context.CancelCauseFunc
	idle        chan *execution // runners waiting for a job receive from it (see start)
	runnersDone chan struct{}   // closed when the node has stopped: idle runners return
	fetchers    sync.WaitGroup
	jobs        sync.WaitGroup
	bgCancel    context.CancelFunc
	bg          sync.WaitGroup
	drainDone   chan struct{} // closed: the completer may finish
	compDone    chan struct{}
}

var (
	errShutdown        = errors.New("node is shutting down")
	errSingletonLost   = errors.New("this node lost the singleton lease of its kind")
	errLeaseLost       = errors.New("the job's lease ran out and this node claimed it again")
	errCancelledByUser = errors.New("cancelled by user")
)

// NewNode checks cfg and returns a Node ready to Start.
func NewNode(cfg Config) (*Node, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("rota: node: %w: Config.Store is required", ErrInvalid)
	}
	if cfg.Workers == nil || len(cfg.Workers.kinds) == 0 {
		return nil, fmt.Errorf("rota: node: %w: Config.Workers has no workers; register at least one with AddWorker", ErrInvalid)
	}
	if len(cfg.Queues) == 0 {
		cfg.Queues = map[string]QueueConfig{QueueDefault: {}}
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ID == "" {
		cfg.ID = defaultNodeID()
	}
	setDefault(&cfg.JobLease, JobLeaseDefault)
	setDefault(&cfg.RescueInterval, RescueIntervalDefault)
	setDefault(&cfg.FetchPollInterval, FetchPollIntervalDefault)
	setDefault(&cfg.TimeoutGrace, TimeoutGraceDefault)
	setDefault(&cfg.MaxResultBytes, MaxResultBytesDefault)
	setDefault(&cfg.PruneInterval, PruneIntervalDefault)
	setDefault(&cfg.TidyInterval, TidyIntervalDefault)
	setDefault(&cfg.CronInterval, CronIntervalDefault)
	setDefault(&cfg.RegisterInterval, RegisterIntervalDefault)
	setDefault(&cfg.NodeStaleAfter, NodeStaleAfterDefault)
	setDefault(&cfg.StatsInterval, StatsIntervalDefault)
	setDefault(&cfg.Version, "dev")
	if err := checkIntervals(cfg); err != nil {
		return nil, fmt.Errorf("rota: node: %w", err)
	}
	cfg.Retention = cfg.Retention.withDefaults()
	n := &Node{
		cfg:         cfg,
		clock:       cfg.Clock,
		logger:      cfg.Logger.With("node", cfg.ID),
		kinds:       cfg.Workers.Kinds(),
		running:     map[int64]*execution{},
		stopFetch:   make(chan struct{}),
		idle:        make(chan *execution),
		runnersDone: make(chan struct{}),
		drainDone:   make(chan struct{}),
		compDone:    make(chan struct{}),
	}
	sort.Strings(n.kinds)
	if _, ok := cfg.Store.(store.StatsKeeper); ok { // counts nothing will write would only pile up
		n.counts = fleetstats.NewCounter(cfg.ID)
		n.Handle(n.countEvent)
	}
	n.events.log = newEventLog(n.logger, n.clock).log
	if cfg.availableMemory == nil {
		cfg.availableMemory = memory.Available
	}
	n.memFloor = memFloor{min: cfg.MinFreeMemory, available: cfg.availableMemory}
	n.client = NewClient(cfg.Store, &ClientConfig{Clock: cfg.Clock, Logger: cfg.Logger, MaxArgsBytes: cfg.MaxArgsBytes,
		TracerProvider: cfg.TracerProvider})
	n.tracer = newTracer(cfg.TracerProvider)
	n.client.onCancel = n.cancelLocal
	n.completer = completer.New(cfg.Store, cfg.Clock, func(f completer.Failure) {
		n.events.emit(Event{Type: EventStoreError, Op: "complete", Count: f.Jobs, Reason: string(f.Next),
			Error: f.Err.Error(), At: n.clock.Now()})
	})
	names := make([]string, 0, len(cfg.Queues))
	for name := range cfg.Queues {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := validName("queue", name); err != nil {
			return nil, fmt.Errorf("rota: node: %w", err)
		}
		max := cfg.Queues[name].MaxWorkers
		if max <= 0 {
			max = QueueMaxWorkersDefault
		}
		n.queues = append(n.queues, newQueue(n, name, max))
		n.capacity += max
	}
	if err := n.newElector(); err != nil {
		return nil, fmt.Errorf("rota: node: %w", err)
	}
	if err := n.newSingletons(); err != nil {
		return nil, fmt.Errorf("rota: node: %w", err)
	}
	return n, nil
}

// checkIntervals refuses negative durations, which the defaults (for zero) leave as they are: a
// ticker of one would panic once the node runs. The heartbeat ticks every third of JobLease.
func checkIntervals(cfg Config) error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"JobLease", cfg.JobLease}, {"RescueInterval", cfg.RescueInterval},
		{"FetchPollInterval", cfg.FetchPollInterval}, {"TimeoutGrace", cfg.TimeoutGrace},
		{"PruneInterval", cfg.PruneInterval}, {"TidyInterval", cfg.TidyInterval},
		{"CronInterval", cfg.CronInterval}, {"RegisterInterval", cfg.RegisterInterval},
		{"NodeStaleAfter", cfg.NodeStaleAfter}, {"StatsInterval", cfg.StatsInterval},
	} {
		if d.v < 0 {
			return fmt.Errorf("%w: %s %v is negative", ErrInvalid, d.name, d.v)
		}
	}
	if cfg.JobLease < 3 {
		return fmt.Errorf("%w: JobLease %v is too short to heartbeat (every third of it)", ErrInvalid, cfg.JobLease)
	}
	return nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

func defaultNodeID() string {
	host, err := os.Hostname()
	if err != nil {
		host = "node"
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// ID returns the node's id, as it appears in job owners and logs.
func (n *Node) ID() string { return n.cfg.ID }

// Client returns a Client on the node's store. Cancelling through it reaches jobs this node runs
// at once.
func (n *Node) Client() *Client { return n.client }

// Start begins claiming and running jobs. ctx bounds start-up only; use Stop to end the node.
func (n *Node) Start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.started {
		return errors.New("rota: node: already started")
	}
	if _, err := n.cfg.Store.Identity(ctx); err != nil {
		return fmt.Errorf("rota: node: store is not ready (run migrate?): %w", err)
	}
	for _, s := range n.cfg.Schedules {
		if _, err := n.client.UpsertSchedule(ctx, s); err != nil {
			return fmt.Errorf("rota: node: %w", err)
		}
	}
	n.refreshLimits(ctx)
	n.started = true
	n.workCtx, n.stopWork = context.WithCancelCause(context.Background())
	n.claimCtx, n.endClaims = context.WithCancel(context.Background())
	bgCtx, cancel := context.WithCancel(context.Background())
	n.bgCancel = cancel
	n.goBackground(func() { n.completer.Run(bgCtx, n.drainDone); close(n.compDone) })
	n.goBackground(func() { n.heartbeat(bgCtx) })
	n.startedAt = n.clock.Now()
	// A process before this one may have run under the same id (a --node-id kept across a
	// restart) and left jobs running: the first heartbeats look for them (see strays).
	n.strays.lost.Store(1)
	n.goBackground(func() { n.elector.Run(bgCtx) })
	n.runSingletons(bgCtx)
	services := n.services()
	for _, s := range n.nodeServices() {
		n.goBackground(func() { services.Loop(bgCtx, s) })
	}
	if notifier, ok := n.cfg.Store.(store.Notifier); ok {
		ch, err := notifier.Subscribe(bgCtx)
		n.goBackground(func() { n.listen(bgCtx, notifier, ch, err) })
	}
	loops := 1
	if c, ok := n.cfg.Store.(store.ConcurrentClaimer); ok {
		loops = max(1, c.ClaimsInFlight())
	}
	for _, q := range n.queues {
		for i := range loops {
			n.fetchers.Add(1)
			go func() {
				defer n.fetchers.Done()
				q.run(i == 0)
			}()
		}
	}
	n.events.emit(Event{Type: EventNodeStarted, Count: len(n.queues), Kinds: n.kinds, At: n.clock.Now()})
	return nil
}

func (n *Node) goBackground(f func()) {
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		f()
	}()
}

// Stop shuts the node down gracefully: it claims nothing more, lets running jobs finish until ctx
// ends, then cancels what is left; those jobs go back to their queue, first in line, without
// using an attempt. Leases are held until nothing runs. A claim still waiting on an unresponsive
// store when ctx ends is cancelled too (what it may have claimed is rescued once its leases
// expire). Outcomes the store has not taken yet get TimeoutGrace more, or until ctx ends if
// that comes first; what is still unrecorded then is rescued like a dead node's jobs. Give ctx a
// deadline below your process manager's kill timeout. Stop returns ctx's error if jobs had to be
// cancelled.
func (n *Node) Stop(ctx context.Context) error {
	n.mu.Lock()
	started := n.started
	n.mu.Unlock()
	if !started {
		return nil
	}
	var err error
	n.stopOnce.Do(func() { err = n.stop(ctx) })
	return err
}

func (n *Node) stop(ctx context.Context) error {
	close(n.stopFetch)
	fetched := make(chan struct{})
	go func() {
		n.fetchers.Wait()
		close(fetched)
	}()
	if !doneBefore(ctx, fetched) {
		// A claim still waits on a store that does not answer. Cancelling it may lose jobs it
		// claimed after all; their leases expire and the rescuer hands them out again.
		n.endClaims()
		<-fetched
	}
	n.endClaims()
	jobsDone := make(chan struct{})
	go func() {
		n.jobs.Wait()
		close(jobsDone)
	}()
	var drainErr error
	if !doneBefore(ctx, jobsDone) && n.runningCount() > 0 {
		drainErr = fmt.Errorf("rota: node stop: %d jobs still running when the drain deadline passed; handed back: %w", n.runningCount(), ctx.Err())
		n.events.emit(Event{Type: EventDrainDeadline, Count: n.runningCount(), At: n.clock.Now()})
		n.stopWork(errShutdown)
		select {
		case <-jobsDone:
		case <-n.clock.After(n.cfg.TimeoutGrace):
			n.abandonAll()
		}
	}
	<-jobsDone
	close(n.runnersDone)
	close(n.drainDone)
	// The outcomes get the grace, or what is left of the caller's deadline if that is shorter;
	// a deadline that has already passed (the drain overran it) leaves them the grace alone.
	deadline := ctx.Done()
	if ctx.Err() != nil {
		deadline = nil
	}
	select {
	case <-n.compDone:
	case <-n.clock.After(n.cfg.TimeoutGrace):
		n.events.emit(Event{Type: EventOutcomesUnrecorded, Count: n.completer.Pending(), Reason: "grace", At: n.clock.Now()})
	case <-deadline:
		n.events.emit(Event{Type: EventOutcomesUnrecorded, Count: n.completer.Pending(), Reason: "deadline", At: n.clock.Now()})
	}
	n.bgCancel()
	n.bg.Wait()
	n.stopWork(errShutdown)
	n.events.emit(Event{Type: EventNodeStopped, At: n.clock.Now()})
	return drainErr
}

// doneBefore waits for done or ctx's end and reports whether done closed; when both happened,
// done wins.
func doneBefore(ctx context.Context, done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	case <-ctx.Done():
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

func (n *Node) runningCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.running)
}

// cancelLocal cancels a job this node runs, if it runs it.
func (n *Node) cancelLocal(id int64) {
	n.mu.Lock()
	e := n.running[id]
	n.mu.Unlock()
	if e != nil {
		n.interrupt(e, errCancelledByUser)
	}
}
