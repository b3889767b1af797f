package sqlite

import (
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// fileWatches shares one file-system watch among every Store of the process. The kernel limits
// the watch instances a user may hold (on Linux fs.inotify.max_user_instances, 128 by default,
// shared with every other program of the user): a watch per Store made a process with many
// stores, or a machine running many processes, run out, and its stores fall back to reading the
// change counter every 100 ms.
var fileWatches = &walWatches{}

// walWatches tells Stores when their WAL file is written. One fsnotify.Watcher watches the
// directories the WAL files are in; it starts with the first Store that asks and closes with the
// last that leaves.
type walWatches struct {
	mu   sync.Mutex
	fw   *fsnotify.Watcher
	dirs map[string]int                        // watched directory → WAL files watched in it
	wals map[string]map[chan struct{}]struct{} // WAL path → channels of the Stores watching it
}

// add has a value sent on ch, without blocking (ch has a buffer of one), whenever the file at wal
// is written. It returns the function that stops it, or an error where the file system cannot
// report writes or the process may watch no more files.
func (w *walWatches) add(wal string, ch chan struct{}) (remove func(), err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fw == nil {
		fw, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, err
		}
		w.fw, w.dirs, w.wals = fw, map[string]int{}, map[string]map[chan struct{}]struct{}{}
		go w.dispatch(fw)
	}
	dir := filepath.Dir(wal)
	if w.dirs[dir] == 0 {
		if err := w.fw.Add(dir); err != nil {
			w.closeIfIdle()
			return nil, err
		}
	}
	w.dirs[dir]++
	if w.wals[wal] == nil {
		w.wals[wal] = map[chan struct{}]struct{}{}
	}
	w.wals[wal][ch] = struct{}{}
	var once sync.Once
	return func() { once.Do(func() { w.remove(wal, ch) }) }, nil
}

func (w *walWatches) remove(wal string, ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.wals[wal], ch)
	if len(w.wals[wal]) == 0 {
		delete(w.wals, wal)
	}
	dir := filepath.Dir(wal)
	if w.dirs[dir]--; w.dirs[dir] == 0 {
		delete(w.dirs, dir)
		_ = w.fw.Remove(dir) // fails only when the directory is gone, which ended the watch too
	}
	w.closeIfIdle()
}

// closeIfIdle closes the watcher when nothing is watched. The caller holds w.mu. Close waits for
// the watcher's reader, which may be sending to dispatch, which may wait for w.mu: it runs
// without the lock.
func (w *walWatches) closeIfIdle() {
	if len(w.dirs) > 0 || w.fw == nil {
		return
	}
	fw := w.fw
	w.fw = nil
	go fw.Close()
}

// dispatch passes fw's write events on to the Stores watching the written file, until fw closes.
// An overflowing event queue (fw.Errors) loses events only: every Store still reads its counter
// on its backstop ticker.
func (w *walWatches) dispatch(fw *fsnotify.Watcher) {
	go func() {
		for range fw.Errors {
		}
	}()
	for ev := range fw.Events {
		if !ev.Has(fsnotify.Write) {
			continue
		}
		name := filepath.Clean(ev.Name)
		w.mu.Lock()
		for ch := range w.wals[name] {
			select {
			case ch <- struct{}{}:
			default: // a signal is already pending: one read of the counter answers both
			}
		}
		w.mu.Unlock()
	}
}
