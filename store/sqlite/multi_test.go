package sqlite_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

// Several processes may share one file: each has its own writer, and SQLite's write lock (taken
// up front by BEGIN IMMEDIATE, waited for with the busy timeout) serialises them.

const sharedJobs = 3000

func fill(t *testing.T, s *sqlite.Store, n int) {
	t.Helper()
	ps := make([]store.InsertParams, n)
	for i := range ps {
		ps[i] = job()
	}
	if _, err := s.Insert(t.Context(), ps); err != nil {
		t.Fatal(err)
	}
}

// drain claims from s in batches of 10 until the queue is empty.
func drain(s *sqlite.Store, owner string) ([]int64, error) {
	var ids []int64
	for {
		rows, err := s.Claim(context.Background(), store.ClaimParams{
			Queue: "default", Kinds: []string{"k"}, Max: 10, Owner: owner, LeaseFor: time.Minute,
		})
		if err != nil {
			return ids, err
		}
		if len(rows) == 0 {
			return ids, nil
		}
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
	}
}

// checkOnce fails unless every one of n jobs was claimed exactly once across claimers.
func checkOnce(t *testing.T, n int, claimers map[string][]int64) {
	t.Helper()
	by := make(map[int64]string, n)
	for who, ids := range claimers {
		t.Logf("%s claimed %d jobs", who, len(ids))
		for _, id := range ids {
			if other, dup := by[id]; dup {
				t.Fatalf("job %d claimed by %s and %s", id, other, who)
			}
			by[id] = who
		}
	}
	if len(by) != n {
		t.Fatalf("%d jobs claimed, want %d", len(by), n)
	}
}

func TestTwoStoresOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rota.db")
	a, b := open(t, path), open(t, path)
	fill(t, a, sharedJobs)
	claimed := make(map[string][]int64)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 4 {
		for name, s := range map[string]*sqlite.Store{"a": a, "b": b} {
			who := fmt.Sprintf("%s%d", name, i)
			wg.Go(func() {
				ids, err := drain(s, who)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				claimed[who] = ids
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	checkOnce(t, sharedJobs, claimed)
}

// childEnv names the file a child process claims from; see TestChildClaimer.
const childEnv = "ROTA_SQLITE_CHILD_DB"

// TestTwoProcessesOneFile runs this test binary again as a second process that claims from the
// same file while this one does.
func TestTwoProcessesOneFile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second process")
	}
	path := filepath.Join(t.TempDir(), "rota.db")
	s := open(t, path)
	fill(t, s, sharedJobs)

	cmd := exec.Command(os.Args[0], "-test.run=^TestChildClaimer$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("child did not start: %q %v", lines.Text(), lines.Err())
	}

	claimed := make(map[string][]int64)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 2 {
		who := fmt.Sprint("parent", i)
		wg.Go(func() {
			ids, err := drain(s, who)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			claimed[who] = ids
			mu.Unlock()
		})
	}
	fmt.Fprintln(stdin, "go")
	var child []int64
	for lines.Scan() {
		if id, ok := strings.CutPrefix(lines.Text(), "claimed "); ok {
			n, err := strconv.ParseInt(id, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			child = append(child, n)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	wg.Wait()
	claimed["child"] = child
	checkOnce(t, sharedJobs, claimed)
}

// TestChildClaimer is the second process of TestTwoProcessesOneFile; it does nothing otherwise.
// It says "ready" once its store is open, waits for a line on stdin, then claims until the queue
// is empty and prints the ids.
func TestChildClaimer(t *testing.T) {
	path := os.Getenv(childEnv)
	if path == "" {
		t.Skip("runs only as the child of TestTwoProcessesOneFile")
	}
	s := open(t, path)
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	ids, err := drain(s, "child")
	for _, id := range ids {
		fmt.Println("claimed", id)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// Another process's commits reach this Store's subscribers: TopicChanged for every commit, and a
// TopicInsert naming no queue only for commits that inserted jobs (SQLite tells that the file
// changed, and the jobs' id sequence tells whether it grew, no more). b stands for the other
// process: connections of its own.
func TestOtherProcessCommitNotifies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rota.db")
	a, b := open(t, path), open(t, path)
	ch, err := a.Subscribe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	next := func() store.Notification {
		t.Helper()
		select {
		case n := <-ch:
			return n
		case <-time.After(10 * time.Second):
			t.Fatal("no notification within 10s")
			return store.Notification{}
		}
	}
	changed := store.Notification{Topic: store.TopicChanged}
	inserted := store.Notification{Topic: store.TopicInsert}

	fill(t, b, 1)
	if n1, n2 := next(), next(); n1 != changed || n2 != inserted {
		t.Fatalf("after b's insert: %+v, %+v; want %+v, %+v", n1, n2, changed, inserted)
	}
	if _, err := drain(b, "b"); err != nil { // a claim: a commit that inserts nothing
		t.Fatal(err)
	}
	if n := next(); n != changed {
		t.Fatalf("after b's claim: %+v, want %+v", n, changed)
	}
	fill(t, b, 1)
	// Had the claim been taken for an insert, its TopicInsert would come now, before the second
	// insert's TopicChanged.
	if n1, n2 := next(), next(); n1 != changed || n2 != inserted {
		t.Fatalf("after b's second insert: %+v, %+v; want %+v, %+v", n1, n2, changed, inserted)
	}
}

// Another process's commit is noticed when the file system reports the write to the WAL file, not
// at the next poll: with the poll an hour away, the notification still comes.
// TestStoresShareOneFileWatch opens more subscribed Stores than the kernel lets a user hold
// file-watch instances (on Linux fs.inotify.max_user_instances): each must still hear of another
// connection's commit without its poll, so the Stores of a process share one watch.
func TestStoresShareOneFileWatch(t *testing.T) {
	n := 129 // one past Linux's default limit
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_instances"); err == nil {
		if limit, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && limit < 1000 {
			n = limit + 1
		}
	}
	dir := t.TempDir()
	subs := make([]<-chan store.Notification, n)
	var last *sqlite.Store
	for i := range subs {
		last = open(t, filepath.Join(dir, fmt.Sprintf("rota-%d.db", i)), sqlite.WithWatchInterval(time.Hour))
		ch, err := last.Subscribe(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		subs[i] = ch
	}
	other := open(t, filepath.Join(dir, fmt.Sprintf("rota-%d.db", n-1)))
	fill(t, other, 1)
	timeout := time.After(10 * time.Second)
	for {
		select {
		case n := <-subs[len(subs)-1]:
			if n.Topic == store.TopicInsert {
				return
			}
		case <-timeout:
			t.Fatalf("store %d of %d heard of no insert within 10s with its poll an hour away", n, n)
		}
	}
}

func TestOtherProcessCommitNoticedWithoutPoll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rota.db")
	// The store's debug log says it when the file system cannot report writes.
	a := open(t, path, sqlite.WithWatchInterval(time.Hour),
		sqlite.WithLogger(slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))))
	b := open(t, path)
	ch, err := a.Subscribe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	fill(t, b, 1)
	for {
		select {
		case n := <-ch:
			if n.Topic == store.TopicInsert {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no insert notification within 10s with the poll an hour away")
		}
	}
}
