package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"time"

	"github.com/rotahq/rota/internal/backoff"
	"github.com/rotahq/rota/store"
)

// WatchIntervalDefault is how often a Store with subscribers looks for commits made through other
// connections to its file, by other processes above all, when the file system does not say
// that the file changed (see watcher): the most a job inserted by another process then waits
// before an idle node here claims it, and a Wait here learns that a job ended there. Reading the
// file's change counter costs microseconds, so a short interval is cheap.
const WatchIntervalDefault = 10 * time.Millisecond

// watchBackstop is how often the counter is read where the file system does report writes: in
// case a report is lost (an overflowing queue of events). A shorter interval made the reads most
// of what an idle node costs.
const watchBackstop = 100 * time.Millisecond

// watchRechecks are the delays of the reads that follow a reported write that moved nothing
// yet (see watchLoop): the commit's last step takes microseconds, unless its process is
// descheduled between the two. Two, because this Store's own commits are reported too and
// never move the counter: every one of them is followed by these reads.
var watchRechecks = []time.Duration{time.Millisecond, 10 * time.Millisecond}

// watchBackoff spaces the watcher's reads while they fail (a file gone, a disk in trouble), so
// that it does not log a hundred warnings a second; subscribers poll meanwhile.
var watchBackoff = backoff.Policy{Base: 100 * time.Millisecond, Max: 10 * time.Second}

// watcher turns other processes' commits into notifications: TopicChanged for any commit, and
// TopicInsert with no queue when jobs were inserted. SQLite cannot say what another process
// wrote, only that the file changed: PRAGMA data_version, read on one connection, moves whenever
// any other connection commits, and only then. It is read on the writer's
// connection, so this Store's own writes never move it: what moves it is another process, or a
// caller's transaction on DB() (InsertTx), whose commit the Store cannot see either. The watcher
// starts with the first subscriber, so a Store nobody subscribes to (a command that inserts and
// exits) pays nothing.
//
// It reads the counter when the file system reports a write to the database's WAL file
// (inotify, kqueue: fsnotify), which a commit anywhere makes, and every 100 ms in case a report
// is lost: a job another process inserts is claimed here within a millisecond or two, and an idle
// Store reads the counter ten times a second. Where the file system reports nothing (some
// network and container file systems), it reads it every WatchIntervalDefault instead.
type watcher struct {
	stop chan struct{}
	done chan struct{}
	// wrote receives a value when the database's WAL file is written; nil where the file
	// system cannot say (see fileWatches). unwatch stops it.
	wrote   chan struct{}
	unwatch func()
}

// startWatch starts the watcher unless it runs. The caller holds s.watchMu.
func (s *Store) startWatch() error {
	if s.watch != nil {
		return nil
	}
	// Both baselines are read before Subscribe returns, so that every commit after it counts.
	version, err := dataVersion(s.w.conn)
	if err != nil {
		return err
	}
	seq, err := jobsSequence(s.w.conn)
	if err != nil {
		return err
	}
	w := &watcher{stop: make(chan struct{}), done: make(chan struct{})}
	w.wrote, w.unwatch = s.watchFiles()
	s.watch = w
	go s.watchLoop(w, version, seq)
	return nil
}

// watchLoop reads the counter between the writer's statements: database/sql runs one call at a
// time on a connection, and the read takes microseconds.
func (s *Store) watchLoop(w *watcher, last, lastSeq int64) {
	defer close(w.done)
	// Real time, not the Store's clock: this polls a counter; no job's timing depends on it.
	interval := s.watchInterval
	if w.wrote != nil {
		defer w.unwatch()
		interval = max(interval, watchBackstop)
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	failures := 0 // reads failed in a row
	// A commit writes its last frame to the WAL file, which is reported, and then moves the
	// counter in the shared-memory index, which is not: a read right after the report can come
	// between the two. recheck reads again soon after a reported write found no change, twice,
	// so that such a commit is not left for the backstop.
	var recheck <-chan time.Time
	rechecks := 0
	for {
		reported := false
		select {
		case <-w.stop:
			return
		case <-tick.C:
		case <-recheck:
			recheck = nil
			reported = rechecks < len(watchRechecks)
		case <-w.wrote: // a commit writes the file many times: the channel holds one signal for all
			reported, rechecks = true, 0
		}
		v, err := dataVersion(s.w.conn)
		if err != nil {
			failures++
			delay := watchBackoff.Delay(failures)
			s.log.Warn("sqlite: watching for other processes' commits failed; they are found by polling",
				"error", err, "retry_in", delay)
			select {
			case <-w.stop:
				return
			case <-time.After(delay):
			}
			continue
		}
		failures = 0
		if v == last {
			if reported && recheck == nil && rechecks < len(watchRechecks) {
				recheck = time.After(watchRechecks[rechecks])
				rechecks++
			}
			continue
		}
		last, recheck, rechecks = v, nil, 0
		notes := []store.Notification{{Topic: store.TopicChanged}}
		// Only a commit that inserted jobs is worth a claim on every queue: the jobs table's
		// id sequence (AUTOINCREMENT) moves with inserts and nothing else. Completions and
		// heartbeats of a busy neighbour then wake waiters, not claims.
		if seq, err := jobsSequence(s.w.conn); err != nil || seq != lastSeq {
			lastSeq = seq
			notes = append(notes, store.Notification{Topic: store.TopicInsert})
		}
		s.hub.Publish(notes)
	}
}

// watchFiles has the process's file watch (fileWatches) signal writes to the database's WAL
// file. It returns a nil channel where the file system cannot report changes, or the process may
// watch no more files: the ticker then does it alone.
func (s *Store) watchFiles() (chan struct{}, func()) {
	wrote := make(chan struct{}, 1)
	unwatch, err := fileWatches.add(walPath(s.path), wrote)
	if err != nil {
		s.log.Debug("sqlite: cannot watch the database's files; other processes' commits are found by polling", "error", err)
		return nil, nil
	}
	return wrote, unwatch
}

// walPath is the absolute name of the WAL file of the database at path, as file events name it.
func walPath(path string) string {
	// SQLite follows symbolic links to the database file and keeps its WAL beside the file they
	// lead to.
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return filepath.Clean(path) + "-wal"
}

func jobsSequence(conn *sql.Conn) (int64, error) {
	var seq int64
	err := conn.QueryRowContext(context.Background(),
		`SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'jobs'), 0)`).Scan(&seq)
	return seq, err
}

func dataVersion(conn *sql.Conn) (int64, error) {
	var v int64
	err := conn.QueryRowContext(context.Background(), "PRAGMA data_version").Scan(&v)
	return v, err
}

// close stops the watcher, if it runs, and waits for it.
func (w *watcher) close() {
	if w != nil {
		close(w.stop)
		<-w.done
	}
}
