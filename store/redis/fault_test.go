package redis

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/rediskeys"
	"github.com/rotahq/rota/internal/redistest"
	"github.com/rotahq/rota/store"
)

// Faults that need a server of their own (memory limits, script flushes, a dying server) run on
// a private redis-server, so they never disturb the shared one.

// After FUNCTION FLUSH (or a restart without persistence, a new primary) the library is loaded
// again on the fly, and a large insert, whose MULTI carries the scripts' source, needs nothing
// loaded at all.
func TestFunctionFlush(t *testing.T) {
	url, _ := redistest.Server(t)
	s := openURL(t, url, "flush", WithAutoMigrate())
	c := redistest.Client(t, url)
	flush := func() {
		t.Helper()
		if err := c.FunctionFlush(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.ScriptFlush(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	flush()
	if _, err := s.Insert(t.Context(), []store.InsertParams{job("k")}); err != nil {
		t.Fatalf("Insert after FUNCTION FLUSH: %v", err)
	}
	flush()
	rows, err := s.Claim(t.Context(), store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 1, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(rows) != 1 {
		t.Fatalf("Claim after FUNCTION FLUSH = %d rows, %v", len(rows), err)
	}
	flush()
	many := make([]store.InsertParams, 2*insertChunk+1) // three scripts in one MULTI
	for i := range many {
		many[i] = job("k")
	}
	res, err := s.Insert(t.Context(), many)
	if err != nil || len(res) != len(many) {
		t.Fatalf("Insert of %d after both flushes = %d results, %v", len(many), len(res), err)
	}
	qs, err := s.QueueStats(t.Context())
	if err != nil || len(qs) != 1 || qs[0].Counts[store.StateAvailable] != int64(len(many)) || qs[0].Counts[store.StateRunning] != 1 {
		t.Fatalf("QueueStats after the flushes = %+v, %v; want %d available, 1 running", qs, err, len(many))
	}
}

// A Redis out of memory refuses a script before it starts (the #!lua line): the call fails with
// an error wrapping store.ErrUnavailable and nothing of it is written.
func TestOutOfMemory(t *testing.T) {
	url, _ := redistest.Server(t)
	s := openURL(t, url, "oom", WithAutoMigrate())
	ctx := t.Context()
	j, err := s.Insert(ctx, []store.InsertParams{job("k")})
	if err != nil {
		t.Fatal(err)
	}
	c := redistest.Client(t, url)
	before := c.DBSize(ctx).Val()
	if err := c.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.ConfigSet(context.Background(), "maxmemory", "0") })
	many := make([]store.InsertParams, 1500) // two scripts in one transaction
	for i := range many {
		many[i] = job("k")
	}
	for what, call := range map[string]func() error{
		"Insert":      func() error { _, err := s.Insert(ctx, []store.InsertParams{job("k")}); return err },
		"Insert 1500": func() error { _, err := s.Insert(ctx, many); return err },
		"Claim": func() error {
			_, err := s.Claim(ctx, store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 1, Owner: "n", LeaseFor: time.Minute})
			return err
		},
	} {
		err := call()
		if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "out of memory") {
			t.Errorf("%s with memory full = %v, want an out-of-memory error wrapping ErrUnavailable", what, err)
		}
	}
	if err := c.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if after := c.DBSize(ctx).Val(); after != before {
		t.Errorf("%d keys after the refused calls, %d before", after, before)
	}
	got, err := s.Get(ctx, j[0].Job.ID)
	if err != nil || got.State != store.StateAvailable || got.Attempt != 0 {
		t.Fatalf("job after the refused claim: %+v, %v", got, err)
	}
}

// A Redis that goes away mid-use gives errors wrapping store.ErrUnavailable.
func TestUnreachable(t *testing.T) {
	url, proc := redistest.Server(t)
	s := openURL(t, url, "gone", WithAutoMigrate())
	if _, err := s.Insert(t.Context(), []store.InsertParams{job("k")}); err != nil {
		t.Fatal(err)
	}
	proc.Kill()
	proc.Wait()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := s.Insert(ctx, []store.InsertParams{job("k")}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Insert with Redis gone = %v, want ErrUnavailable", err)
	}
	if _, err := s.Get(ctx, 1); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Get with Redis gone = %v, want ErrUnavailable", err)
	}
}

// A key of the namespace holding another type gives a clear error, not a half transition.
func TestWrongType(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	if _, err := s.Insert(ctx, []store.InsertParams{job("k")}); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.Set(ctx, s.prefix+"paused", "not a set", 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := s.Claim(ctx, store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 1, Owner: "n", LeaseFor: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "wrong type") || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Claim with a wrong-type key = %v, want a wrong-type error", err)
	}
	if err := s.PauseQueue(ctx, "default"); err == nil || !strings.Contains(err.Error(), "wrong type") {
		t.Fatalf("PauseQueue with a wrong-type key = %v", err)
	}
}

// A namespace written by a newer rota is refused by Open, Migrate and every script.
func TestSchemaTooNew(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	if _, err := s.Insert(ctx, []store.InsertParams{job("k")}); err != nil {
		t.Fatal(err)
	}
	// As a newer build migrates it: its own id counter, its version.
	newer := s.prefix + "id:" + strconv.Itoa(schemaVersion+1)
	if err := s.rdb.Rename(ctx, s.prefix+"id:"+strconv.Itoa(schemaVersion), newer).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.HSet(ctx, s.keys[0], "version", schemaVersion+1).Err(); err != nil {
		t.Fatal(err)
	}
	unique := job("k")
	unique.UniqueKey = "u"
	for _, p := range []store.InsertParams{job("k"), unique} { // insertrun's way and insert's
		if _, err := s.Insert(ctx, []store.InsertParams{p}); !errors.Is(err, store.ErrSchemaTooNew) {
			t.Errorf("Insert %+v = %v, want ErrSchemaTooNew", p, err)
		}
	}
	if v := s.rdb.Get(ctx, newer).Val(); v != "1" {
		t.Errorf("the newer build's id counter is %q after refused inserts, want 1", v)
	}
	if n := s.rdb.Exists(ctx, s.prefix+"id:"+strconv.Itoa(schemaVersion)).Val(); n != 0 {
		t.Error("a refused insert left this build's id counter behind")
	}
	if err := s.Migrate(ctx); !errors.Is(err, store.ErrSchemaTooNew) {
		t.Errorf("Migrate = %v, want ErrSchemaTooNew", err)
	}
	_, err := Open(ctx, redistest.URL(t), WithNamespace(s.Namespace()), WithLogger(quiet))
	if !errors.Is(err, store.ErrSchemaTooNew) {
		t.Errorf("Open = %v, want ErrSchemaTooNew", err)
	}
}

// A namespace of an older layout is refused until migrated, and Migrate moves it up keeping its
// jobs and identity: the version before dependencies must not be written by this build, nor this
// build's by one that would not settle them.
func TestOlderNamespaceMigratedUp(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	res, err := s.Insert(ctx, []store.InsertParams{job("k")})
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.Identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	olderVersion(t, s, schemaVersion-1, res[0].Job.Queue)
	if _, err := s.Insert(ctx, []store.InsertParams{job("k")}); !errors.Is(err, ErrNotMigrated) {
		t.Fatalf("Insert on an older namespace = %v, want ErrNotMigrated", err)
	}
	migrated(t, s, res[0].Job.ID)
	if again, err := s.Identity(ctx); err != nil || again != id {
		t.Errorf("identity %q (%v) after Migrate, want %q kept", again, err, id)
	}
	if _, err := s.Get(ctx, res[0].Job.ID); err != nil {
		t.Errorf("job inserted before: %v", err)
	}
}

// A flushed namespace is refused, not rebuilt with ids from 1; migrated again, it has a new
// identity, so leases taken before prove nothing.
func TestFlushedNamespace(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	if _, err := s.Insert(ctx, []store.InsertParams{job("k")}); err != nil {
		t.Fatal(err)
	}
	id, err := s.Identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rediskeys.Delete(ctx, s.rdb, s.Namespace()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Insert(ctx, []store.InsertParams{job("k")}); !errors.Is(err, ErrNotMigrated) {
		t.Fatalf("Insert into a flushed namespace = %v, want ErrNotMigrated", err)
	}
	if _, err := s.Identity(ctx); !errors.Is(err, ErrNotMigrated) {
		t.Fatalf("Identity of a flushed namespace = %v, want ErrNotMigrated", err)
	}
	if n, _ := s.rdb.Exists(ctx, s.prefix+"id:"+strconv.Itoa(schemaVersion), s.prefix+"j:1").Result(); n != 0 {
		t.Fatalf("the refused insert wrote %d keys", n)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if again, err := s.Identity(ctx); err != nil || again == id {
		t.Fatalf("Identity after migrating a flushed namespace = %q, %v; want a new one (was %q)", again, err, id)
	}
}

// After the subscriber's connection is lost, subscribers are told to look again.
func TestSubscriberReconnects(t *testing.T) {
	url, _ := redistest.Server(t)
	s := openURL(t, url, "sub", WithAutoMigrate())
	ch, err := s.Subscribe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	c := redistest.Client(t, url)
	if err := c.Do(t.Context(), "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(20 * time.Second)
	for changed := false; !changed; {
		select {
		case n := <-ch:
			changed = n.Topic == store.TopicChanged
		case <-timeout:
			t.Fatal("no TopicChanged after the subscriber's connection was killed")
		}
	}
	// And it delivers again: another Store's insert reaches it.
	other := openURL(t, url, "sub")
	if _, err := other.Insert(t.Context(), []store.InsertParams{{Kind: "k", Queue: "woken", Args: []byte(`{}`), MaxAttempts: 1}}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case n := <-ch:
			if n.Topic == store.TopicInsert && n.Queue == "woken" {
				return
			}
		case <-timeout:
			t.Fatal("no insert notification after the reconnect")
		}
	}
}
