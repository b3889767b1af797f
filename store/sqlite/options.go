package sqlite

import (
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"
)

// Synchronous is SQLite's synchronous setting: how hard a commit pushes its data to the disk.
type Synchronous int

const (
	// SynchronousNormal syncs the WAL at checkpoints, not at every commit. A committed job
	// survives a crash of the process (SIGKILL, OOM kill, panic): it is in the WAL file. A power
	// loss or kernel crash may lose the last commits before it, never corrupt the file.
	SynchronousNormal Synchronous = 1
	// SynchronousFull also syncs the WAL at every commit: a job is on disk when Insert returns.
	// Group commit shares each sync among every caller waiting at that moment, but a caller still
	// waits for one sync of the disk per call.
	SynchronousFull Synchronous = 2
)

// SynchronousDefault is SynchronousNormal. On a 2-core machine FULL meets rota's throughput
// targets only while nothing else uses the disk: ten producers inserting one job per call can
// commit no faster than one disk sync per round trip (0.3 ms on an idle disk, far more on a busy
// one), and FULL measured 5,000-23,000 inserts/s against a target of 15,000. NORMAL measured
// 29,000-50,000, keeps every job a crashed process committed, and is what SQLite recommends with
// WAL. Choose FULL where a power cut must not lose the last moment of work.
const SynchronousDefault = SynchronousNormal

// BusyTimeoutDefault is how long a write waits for another process holding the database's write
// lock. Another process's group commit holds it for milliseconds; the margin is for its
// checkpoints on a slow disk, and for callers' own transactions (InsertTx).
const BusyTimeoutDefault = 10 * time.Second

// ReadConnsDefault is the size of the pool for reads and callers' transactions. WAL readers do
// not block each other or the writer; a few connections cover a dashboard and the runtime's
// queries on two cores.
const ReadConnsDefault = 4

type config struct {
	clock       clockwork.Clock
	synchronous Synchronous
	busyTimeout time.Duration
	readConns   int
	logger      *slog.Logger
	// watchInterval: see WatchIntervalDefault.
	watchInterval time.Duration
	// walResetFrames (see walResetFramesDefault) and checkpointInterval (CheckpointInterval):
	// tests make them small.
	walResetFrames     int
	checkpointInterval time.Duration
	// settleBatch: see WithSettleBatch.
	settleBatch int
}

func defaults() config {
	return config{
		clock:              clockwork.NewRealClock(),
		synchronous:        SynchronousDefault,
		busyTimeout:        BusyTimeoutDefault,
		readConns:          ReadConnsDefault,
		logger:             slog.Default(),
		watchInterval:      WatchIntervalDefault,
		walResetFrames:     walResetFramesDefault,
		checkpointInterval: CheckpointInterval,
		settleBatch:        SettleBatchDefault,
	}
}

// Option configures Open.
type Option func(*config)

// WithClock sets the clock that decides "now": claim and lease times, delayed jobs, rescue.
// Tests pass a fake clock. Nil, the default, means the host's clock.
func WithClock(c clockwork.Clock) Option {
	return func(cfg *config) {
		if c != nil {
			cfg.clock = c
		}
	}
}

// WithSynchronous sets how commits reach the disk. Defaults to SynchronousDefault (NORMAL).
func WithSynchronous(s Synchronous) Option {
	return func(cfg *config) { cfg.synchronous = s }
}

// WithBusyTimeout sets how long a write waits for another process's write lock. Defaults to
// BusyTimeoutDefault.
func WithBusyTimeout(d time.Duration) Option {
	return func(cfg *config) { cfg.busyTimeout = d }
}

// WithReadConns sets the number of connections for reads and InsertTx transactions. Defaults to
// ReadConnsDefault.
func WithReadConns(n int) Option {
	return func(cfg *config) {
		if n > 0 {
			cfg.readConns = n
		}
	}
}

// WithWatchInterval sets how often a Store with subscribers looks for other processes' commits.
// Defaults to WatchIntervalDefault.
func WithWatchInterval(d time.Duration) Option {
	return func(cfg *config) {
		if d > 0 {
			cfg.watchInterval = d
		}
	}
}

// WithSettleBatch sets how many dependency edges one transaction resolves (dependents
// released, counted off or cancelled) when a completion ends jobs that others wait for; what is
// left is settled in further transactions, other writes running between them, before Complete
// returns. n <= 0 is SettleBatchDefault.
func WithSettleBatch(n int) Option {
	return func(cfg *config) {
		if n <= 0 {
			n = SettleBatchDefault
		}
		cfg.settleBatch = n
	}
}

// WithLogger sets the logger for what the store cannot return to a caller (a failed group
// commit, migrations applied). Defaults to slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(cfg *config) {
		if l != nil {
			cfg.logger = l
		}
	}
}
