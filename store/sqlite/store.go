package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/fanout"
)

// ErrClosed is returned by calls on a closed Store.
var ErrClosed = errors.New("store is closed")

// Store is rota's store on one SQLite file. It is safe for concurrent use, and several processes
// may open the same file.
type Store struct {
	clk clockwork.Clock
	log *slog.Logger
	db  *sql.DB // reads and callers' transactions
	wdb *sql.DB // the writer's single connection
	w   *writer
	cp  *checkpointer
	hub *fanout.Hub
	// watch, started by the first Subscribe, notices other processes' commits. watchMu guards
	// it and watchClosed, set by Close so that no watcher starts after it.
	watchMu       sync.Mutex
	watch         *watcher
	watchClosed   bool
	watchInterval time.Duration
	// path is the database file's, whose WAL file the watcher watches.
	path   string
	mu     sync.RWMutex // orders closing against sends on w.reqs
	closed bool
	// leaveParked, set by tests, makes Complete return without settling what it parked, as a
	// Store whose process died right after the completion committed.
	leaveParked bool
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.Notifier    = (*Store)(nil)
	_ store.TxInserter  = (*Store)(nil)
	_ store.QueueLoader = (*Store)(nil)
)

// Open opens (creating it if needed) the store in the file at path and migrates it. The file's
// directory must exist.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	cfg := defaults()
	for _, o := range opts {
		o(&cfg)
	}
	if dir := filepath.Dir(path); dir != "" {
		if fi, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("sqlite: open %s: %s is not a directory", path, dir)
		}
	}
	if err := createPrivate(path, cfg.logger); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	dsn := dataSource(path, cfg)
	s := &Store{clk: cfg.clock, log: cfg.logger, watchInterval: cfg.watchInterval, path: path}
	s.hub = fanout.New(subscriberBuffer)
	var err error
	// The writer waits for the write lock itself (see writer.begin): no busy handler on its
	// connection, once the journal mode is set. It leaves checkpoints to the checkpointer
	// (checkpoint.go).
	if s.wdb, err = sql.Open("sqlite", dsn+"&_pragma=busy_timeout(0)&_pragma=wal_autocheckpoint(0)"+
		fmt.Sprintf("&_pragma=journal_size_limit(%d)", cfg.walResetFrames*4096)); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s.wdb.SetMaxOpenConns(1)
	conn, err := s.wdb.Conn(ctx)
	if err == nil {
		err = conn.PingContext(ctx)
	}
	if err != nil {
		s.wdb.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if s.db, err = sql.Open("sqlite", dsn); err != nil {
		conn.Close()
		s.wdb.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s.db.SetMaxOpenConns(cfg.readConns)
	s.db.SetMaxIdleConns(cfg.readConns)
	cdb, err := sql.Open("sqlite", dsn)
	if err != nil {
		conn.Close()
		s.wdb.Close()
		s.db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	cdb.SetMaxOpenConns(1)
	s.w = newWriter(conn, cfg.clock, cfg.logger, s.hub.Publish)
	s.w.busyTimeout = cfg.busyTimeout
	s.w.settleBatch = cfg.settleBatch
	s.cp = newCheckpointer(cdb, cfg.logger, cfg, func() { s.w.resetDue.Store(true) })
	go s.cp.run()
	s.w.committed = s.cp.wrote
	if fi, err := os.Stat(path); err == nil {
		s.w.moved = func() error {
			now, err := os.Stat(path)
			if err == nil && os.SameFile(fi, now) {
				return nil
			}
			return fmt.Errorf("%w: the database file %s was removed or replaced while the store had it open", store.ErrUnavailable, path)
		}
	}
	go s.w.run()
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: open %s: migrate: %w", path, err)
	}
	return s, nil
}

// dataSource builds the driver's DSN. Every connection gets WAL (readers never block the writer),
// the busy timeout (other processes' write locks), the synchronous mode, and BEGIN IMMEDIATE for
// transactions begun through database/sql: a transaction that takes the write lock up front
// cannot deadlock on upgrading a read lock.
func dataSource(path string, cfg config) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", cfg.busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", fmt.Sprintf("synchronous(%d)", cfg.synchronous))
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Set("_txlock", "immediate")
	// A URI, so that a path with '?' or '#' in it is still a path.
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(path))
	return "file:" + esc + "?" + q.Encode()
}

// DB returns the pool behind reads. Its transactions begin IMMEDIATE; pass one to InsertTx to
// enqueue jobs atomically with the caller's own writes. Keep such transactions short: while one
// is open it holds the database's write lock, and every other write waits for it.
func (s *Store) DB() *sql.DB { return s.db }

// write runs fn in the writer's next group commit and returns once that group has committed (nil)
// or fn's part of it was rolled back (fn's error, or the group's).
func (s *Store) write(ctx context.Context, fn func(*wtx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.submit(&request{ctx: ctx, fn: fn})
}

// submit hands r to the writer and waits for its group to end.
func (s *Store) submit(r *request) error {
	r.done = make(chan error, 1)
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	s.w.reqs <- r
	s.mu.RUnlock()
	return <-r.done
}

// Close finishes the writes already submitted, then closes the connections and ends every
// subscription. Jobs are not touched.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.w.reqs)
	s.mu.Unlock()
	<-s.w.stopped
	cpErr := s.cp.close()
	s.hub.Close()
	s.watchMu.Lock()
	s.watchClosed = true
	watch := s.watch
	s.watchMu.Unlock()
	watch.close()
	return errors.Join(cpErr, s.w.conn.Close(), s.wdb.Close(), s.db.Close())
}
