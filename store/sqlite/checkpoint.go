package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
	"sync/atomic"
	"time"
)

// SQLite copies the WAL back into the database file (a checkpoint) in the connection whose
// commit made the WAL pass 1,000 pages, right after that commit, and a checkpoint syncs the file:
// on a busy disk that held the writer, and with it every claim and insert of the process, for
// tens and at times hundreds of milliseconds, several times a second at 500 jobs/s.
// Insert→start latency from another process at that rate had a p99 of 2.9-162 ms over 14 runs,
// median 5 ms: those stalls.
//
// So the writer's connection does not checkpoint on its own (wal_autocheckpoint=0) and a
// checkpointer does it on a connection of its own, CheckpointInterval after the first commit that
// follows the last checkpoint: PASSIVE, which never waits for the writer or for readers and copies
// what it can, so commits go on while it syncs. An idle store is not kicked and does nothing.
//
// A checkpoint that copies everything lets the next write transaction start the WAL from its
// beginning; under load, commits land while the checkpointer syncs, so its passes never copy
// everything and the WAL would grow without end. Once it holds walResetFrames, the checkpointer
// asks the writer to copy the rest itself between two transactions (resetWAL): a short stall, as
// SQLite's own checkpoints were, but once per walResetFrames rather than per 1,000 pages, and
// the next transaction starts the WAL anew, the file cut back to that length
// (journal_size_limit). Callers' own transactions on DB() keep SQLite's checkpoints after their
// commits, which no kick would follow.
//
// The interval is wall time, not the store's clock: when the file is synced changes no job.

// CheckpointInterval is how long after a commit the checkpointer copies the WAL into the file:
// long enough that a busy store checkpoints many commits at once, short enough that the file is
// never far behind the WAL and the writer's own part stays small.
const CheckpointInterval = 100 * time.Millisecond

// walResetFramesDefault is the WAL's length, in frames of one page, past which the writer
// finishes a checkpoint itself so that the WAL starts again: 64 MiB of 4 KiB pages, reached
// every few seconds at 500 jobs/s.
const walResetFramesDefault = 16384

// checkpointer runs PASSIVE checkpoints on its own connection after commits (kick).
type checkpointer struct {
	db  *sql.DB // one connection
	log *slog.Logger
	// resetWAL asks the writer to finish a checkpoint between two of its transactions, once the
	// WAL holds resetFrames.
	resetWAL    func()
	resetFrames int
	interval    time.Duration // CheckpointInterval
	kick        chan struct{}
	stop        chan struct{}
	done        chan struct{}
	// ran, if set (tests), is told each checkpoint's WAL frames and frames checkpointed.
	ran atomic.Pointer[func(log, checkpointed int, err error)]
}

func newCheckpointer(db *sql.DB, log *slog.Logger, cfg config, resetWAL func()) *checkpointer {
	return &checkpointer{db: db, log: log, resetWAL: resetWAL,
		resetFrames: cfg.walResetFrames, interval: cfg.checkpointInterval,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// wrote tells the checkpointer that the WAL grew. It never blocks.
func (c *checkpointer) wrote() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *checkpointer) run() {
	defer close(c.done)
	wait := time.NewTimer(time.Hour)
	wait.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		}
		wait.Reset(c.interval)
		select {
		case <-c.stop:
			wait.Stop()
			return
		case <-wait.C:
		}
		c.checkpoint()
	}
}

func (c *checkpointer) checkpoint() {
	var busy, log, done int
	err := c.db.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").
		Scan(&busy, &log, &done)
	if err != nil {
		// Another process's checkpoint, or a full disk: the next commit kicks again.
		c.log.Debug("sqlite: checkpoint failed", "err", err)
	} else if log >= c.resetFrames {
		c.resetWAL()
	}
	if ran := c.ran.Load(); ran != nil {
		(*ran)(log, done, err)
	}
}

// close stops the checkpointer. The file's last connection to close checkpoints what is left.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.done
	return c.db.Close()
}
