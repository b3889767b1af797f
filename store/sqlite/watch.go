package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/rotahq/rota/store"
)

// WatchIntervalDefault is how often a Store with subscribers looks for commits made through other
// connections to its file, by other processes above all: the most a job inserted by another
// process waits before an idle node here claims it, and a Wait here learns that a job ended
// there. Reading the file's change counter costs microseconds, so a short interval is cheap.
const WatchIntervalDefault = 10 * time.Millisecond

// watcher turns other processes' commits into TopicChanged notifications. SQLite cannot say what
// another process wrote, only that the file changed: PRAGMA data_version, read on a connection
// of its own, changes whenever any other connection commits. It starts with the first
// subscriber, so a Store nobody subscribes to (a command that inserts and exits) pays nothing.
//
// Commits of this process's own connections change the counter too; they make the notification
// spurious, not wrong: a subscriber looks again and finds nothing new. Local commits are
// announced precisely by the hub already.
type watcher struct {
	db   *sql.DB
	stop chan struct{}
	done chan struct{}
}

// startWatch starts the watcher unless it runs. The caller holds s.hub.mu.
func (s *Store) startWatch() error {
	if s.watch != nil {
		return nil
	}
	db, err := sql.Open("sqlite", s.dsn)
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(context.Background())
	var version int64
	if err == nil {
		version, err = dataVersion(conn)
	}
	if err != nil {
		db.Close()
		return err
	}
	w := &watcher{db: db, stop: make(chan struct{}), done: make(chan struct{})}
	s.watch = w
	go s.watchLoop(w, conn, version)
	return nil
}

func (s *Store) watchLoop(w *watcher, conn *sql.Conn, last int64) {
	defer close(w.done)
	defer conn.Close()
	// Real time, not the Store's clock: this polls a counter; no job's timing depends on it.
	tick := time.NewTicker(s.watchInterval)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		v, err := dataVersion(conn)
		if err != nil {
			s.log.Warn("sqlite: watching for other processes' commits failed; they are found by polling", "error", err)
			continue
		}
		if v != last {
			last = v
			s.hub.publish([]store.Notification{{Topic: store.TopicChanged}})
		}
	}
}

func dataVersion(conn *sql.Conn) (int64, error) {
	var v int64
	err := conn.QueryRowContext(context.Background(), "PRAGMA data_version").Scan(&v)
	return v, err
}

// close stops the watcher and waits for it.
func (w *watcher) close() error {
	if w == nil {
		return nil
	}
	close(w.stop)
	<-w.done
	return errors.Join(w.db.Close())
}
