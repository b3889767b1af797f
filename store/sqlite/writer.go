package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/rotahq/rota/store"
)

// maxGroup bounds how many requests share one transaction: enough to spread one fsync over every
// caller a busy process has waiting, few enough that a commit stays within milliseconds.
const maxGroup = 256

// The writer owns the store's only write connection and runs every write of the process through
// it: it takes the requests that are waiting, runs them in one transaction and commits once
// (group commit). SQLite admits one writer at a time anyway; funnelling the writes through one
// goroutine turns N callers' N transactions and N fsyncs into one of each, and no goroutine of
// this process ever waits on SQLITE_BUSY for another.
//
// A request that fails is rolled back alone and the others in its group still commit (see
// runGroup). A request learns its result only after the commit: a nil error means durable.
type writer struct {
	conn    *sql.Conn
	cache   *stmtCache
	clk     clockwork.Clock
	log     *slog.Logger
	publish func([]store.Notification)
	reqs    chan *request
	stopped chan struct{}
	// busyTimeout bounds how long begin waits for another process's write lock.
	busyTimeout time.Duration
	// committed, if set, is called after each commit (the checkpointer's kick).
	committed func()
	// moved, if set, reports an error when the database file is no longer the one at the store's
	// path (removed or replaced): SQLite would go on writing into the unlinked file, and every
	// write it acknowledged would be lost.
	moved func() error
	// resetDue is set by the checkpointer when the WAL has grown long: the writer finishes a
	// checkpoint before its next transaction (see checkpoint.go).
	resetDue atomic.Bool
	// settleBatch is how many dependency edges the requests of one transaction may resolve
	// under a bound (completions, settlings: see settle.go), and settleLeft what is left of it
	// in the transaction being run: a group of many completions shares one bound.
	settleBatch, settleLeft int
}

type request struct {
	ctx   context.Context
	fn    func(*wtx) error
	done  chan error
	err   error
	notes []store.Notification

	// inserts, when set, says that fn inserts exactly these jobs, none with a unique key, into
	// results. Consecutive such requests of a group are merged into one multi-row INSERT: a
	// service enqueueing one job per call from many goroutines then costs one statement per
	// group, not one per job.
	inserts []store.InsertParams
	results []store.InsertResult

	// dropped is set when the request failed in a way that took the group's transaction with it
	// (SQLite rolls the whole transaction back on a full disk or an I/O error, and the savepoint
	// went too): it keeps its error and is left out of the group's further tries.
	dropped bool
}

func newWriter(conn *sql.Conn, clk clockwork.Clock, log *slog.Logger, publish func([]store.Notification)) *writer {
	return &writer{
		conn:    conn,
		cache:   newStmtCache(conn.PrepareContext),
		clk:     clk,
		log:     log,
		publish: publish,
		reqs:    make(chan *request, maxGroup),
		stopped: make(chan struct{}),
	}
}

// run serves requests until reqs is closed and drained. Open starts it.
func (w *writer) run() {
	defer close(w.stopped)
	group := make([]*request, 0, maxGroup)
	for r := range w.reqs {
		if w.resetDue.Swap(false) {
			w.checkpoint()
		}
		group = w.gather(append(group[:0], r))
		w.runGroup(group)
		for _, r := range group {
			r.done <- unavailable(r.err)
		}
		clear(group)
	}
	w.cache.close()
}

// checkpoint copies what is left of the WAL into the file between two transactions, so that the
// next one starts the WAL from its beginning.
func (w *writer) checkpoint() {
	if _, err := w.conn.ExecContext(stmtCtx, "PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
		w.log.Debug("sqlite: checkpoint failed", "err", err)
	}
}

// gatherRounds bounds how often gather yields for late requests. A round costs a few
// microseconds; a commit with synchronous=FULL costs an fsync, hundreds of them.
const gatherRounds = 4

// gather adds the requests that are waiting, and those about to be: the callers the last commit
// woke are on their way back with their next request, and without a yield the group would commit
// with the first of them alone while the rest wait for the next fsync.
func (w *writer) gather(group []*request) []*request {
	for round := 0; round < gatherRounds && len(group) < maxGroup; round++ {
		before := len(group)
	drain:
		for len(group) < maxGroup {
			select {
			case r, ok := <-w.reqs:
				if !ok {
					return group
				}
				group = append(group, r)
			default:
				break drain
			}
		}
		if round > 0 && len(group) == before {
			break
		}
		runtime.Gosched()
	}
	return group
}

// runGroup runs group in one transaction and sets each request's err. It first runs the requests
// back to back. Should one fail, it rolls everything back and runs the group again with each
// request in a savepoint of its own, so that the failure is undone alone. Failures are rare (a
// Retry of a running job, a full disk); savepoints would cost two statements per request in every
// group.
func (w *writer) runGroup(group []*request) {
	if w.tryGroup(group, false) {
		// Each further try drops the request that lost the transaction: at most len(group).
		for w.tryGroup(group, true) {
		}
	}
}

// tryGroup runs group once. Without savepoints, a request's failure in a group of several aborts
// the transaction and asks for another try (retry = true).
func (w *writer) tryGroup(group []*request, savepoints bool) (retry bool) {
	for _, r := range group {
		if !r.dropped {
			r.err, r.notes = nil, nil
		}
	}
	w.settleLeft = w.settleBatch
	if err := w.begin(); err != nil {
		w.failAll(group, fmt.Errorf("begin: %w", err))
		return false
	}
	if w.moved != nil {
		if err := w.moved(); err != nil {
			w.rollback()
			w.failAll(group, err)
			return false
		}
	}
	applied := 0
	for i := 0; i < len(group); {
		run := group[i : i+1]
		if !savepoints {
			run = group[i : i+mergeable(group[i:])]
		}
		i += len(run)
		if run[0].dropped {
			continue
		} else if len(run) > 1 {
			w.applyInserts(run)
		} else if r := run[0]; r.ctx.Err() != nil {
			r.err = r.ctx.Err()
			continue
		} else if fatal := w.apply(r, savepoints); fatal != nil {
			w.rollback()
			if savepoints && r.err != nil {
				// r's own failure undid the savepoint, and with it the transaction: the others
				// run again without it.
				r.dropped = true
				return true
			}
			w.failAll(group, fatal)
			return false
		}
		for _, r := range run {
			if r.err == nil {
				applied++
			} else if !savepoints && len(group) > 1 {
				w.rollback()
				return true
			}
		}
	}
	if applied == 0 {
		w.rollback()
		return false
	}
	if err := w.raw("COMMIT"); err != nil {
		w.rollback()
		w.failAll(group, fmt.Errorf("commit: %w", err))
		return false
	}
	if w.committed != nil {
		w.committed()
	}
	var notes []store.Notification
	for _, r := range group {
		if r.err == nil {
			notes = append(notes, r.notes...)
		}
	}
	if len(notes) > 0 {
		w.publish(coalesce(notes))
	}
	return false
}

// mergeable returns how many requests at the head of rs are live plain inserts (at least 1).
func mergeable(rs []*request) int {
	n := 0
	for n < len(rs) && rs[n].inserts != nil && rs[n].ctx.Err() == nil && !rs[n].dropped {
		n++
	}
	return max(n, 1)
}

// applyInserts runs the jobs of several insert requests as one insert. They succeed or fail
// together; a failure sends the group to its second try, with a savepoint per request.
func (w *writer) applyInserts(rs []*request) {
	t := &wtx{w: w, now: w.clk.Now()}
	var all []store.InsertParams
	for _, r := range rs {
		all = append(all, r.inserts...)
	}
	res, notes, err := insertJobs(t, t.now, all)
	for _, r := range rs {
		r.err = err
		if err == nil {
			n := len(r.inserts)
			r.results, res = res[:n:n], res[n:]
		}
	}
	rs[0].notes = notes
}

// begin starts the group's transaction, waiting for the write lock while another process holds
// it. SQLite's busy handler would wait too, but it sleeps ever longer (up to 100 ms a try), and
// a busy process that commits every millisecond leaves gaps of microseconds: its neighbour would
// starve. Polling every few hundred microseconds, at random, finds the gaps.
func (w *writer) begin() error {
	deadline := time.Now().Add(w.busyTimeout)
	for {
		err := w.raw("BEGIN IMMEDIATE")
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Duration(50+rand.IntN(250)) * time.Microsecond)
	}
}

// unavailable marks err with store.ErrUnavailable when it says the file cannot be written now
// (disk full, read-only, I/O error, cannot open, out of memory): the store's trouble, not the
// caller's, and it may pass.
func unavailable(err error) error {
	var e *sqlite.Error
	if err == nil || !errors.As(err, &e) {
		return err
	}
	switch e.Code() & 0xff {
	case sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_BUSY:
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}

// isBusy reports whether err is SQLITE_BUSY, in any of its extended forms.
func isBusy(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_BUSY
}

// apply runs one request, in a savepoint if asked. It returns an error only when the transaction
// itself is lost; the request's own failure goes to r.err. A request may run more than once (see
// runGroup): its function must set its results afresh each time.
func (w *writer) apply(r *request, savepoint bool) (fatal error) {
	t := &wtx{w: w, now: w.clk.Now()}
	if !savepoint {
		r.err = r.fn(t)
		r.notes = t.notes
		return nil
	}
	if err := w.raw("SAVEPOINT request"); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	if r.err = r.fn(t); r.err != nil {
		if err := w.raw("ROLLBACK TO request"); err != nil {
			return errors.Join(r.err, fmt.Errorf("rollback to savepoint: %w", err))
		}
	}
	if err := w.raw("RELEASE request"); err != nil {
		return fmt.Errorf("release savepoint: %w", err)
	}
	r.notes = t.notes
	return nil
}

func (w *writer) raw(query string) error {
	st, err := w.cache.get(stmtCtx, query)
	if err == nil {
		_, err = st.ExecContext(stmtCtx)
	}
	return err
}

func (w *writer) rollback() {
	// After some errors (disk full, I/O) SQLite has already rolled back: nothing to do then.
	if err := w.raw("ROLLBACK"); err != nil {
		w.log.Debug("sqlite: rollback", "err", err)
	}
}

func (w *writer) failAll(group []*request, err error) {
	w.log.Error("sqlite: write transaction failed", "requests", len(group), "err", err)
	for _, r := range group {
		if r.err == nil {
			r.err = err
		}
	}
}

// coalesce merges the insert notifications of one queue: one wake-up per queue and commit is
// enough, and a NOTIFY per row is what makes job systems slow.
func coalesce(notes []store.Notification) []store.Notification {
	out := notes[:0:0]
	seen := make(map[string]bool)
	for _, n := range notes {
		if n.Topic == store.TopicInsert {
			if seen[n.Queue] {
				continue
			}
			seen[n.Queue] = true
		}
		out = append(out, n)
	}
	return out
}
