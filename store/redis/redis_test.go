package redis

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/internal/redistest"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clk clockwork.Clock) store.Store {
		return open(t, WithClock(clk))
	})
}

// With a settle batch of two, an end with more dependents than that (a cascade of cancels, a
// fan-out's release, a supersede) leaves the rest parked, and the Store settles it in further
// calls before it returns: the whole contract holds as when one call settles everything.
func TestConformanceSettlingInParts(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clk clockwork.Clock) store.Store {
		return open(t, WithClock(clk), WithSettleBatch(2))
	})
}

// quiet is the tests' logger: the tests check outcomes, not log lines.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// open returns a migrated store on a fresh namespace of the test Redis, closed when the test
// ends (before the namespace's keys are deleted).
func open(t testing.TB, opts ...Option) *Store {
	t.Helper()
	url := redistest.URL(t)
	return openURL(t, url, redistest.Namespace(t, url), append([]Option{WithAutoMigrate()}, opts...)...)
}

func openURL(t testing.TB, url, ns string, opts ...Option) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, url, append([]Option{WithNamespace(ns), WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatalf("Open: %v (is Redis up? scripts/redis.sh starts one)", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func job(kind string) store.InsertParams {
	return store.InsertParams{Kind: kind, Queue: "default", Args: []byte(`{"n":1}`), MaxAttempts: 3}
}

// Several handles on one namespace (nodes sharing a Redis) race claims under a limit, plans of
// one schedule, and the ends of dependencies against each other and against their dependents'
// inserts.
func TestRacesAcrossHandles(t *testing.T) {
	url := redistest.URL(t)
	for name, race := range map[string]func(*testing.T, ...store.Store){
		"LimitRace": storetest.LimitRace, "PlanRace": storetest.PlanRace,
		"LastDepsRace": storetest.LastDepsRace, "InsertDepRace": storetest.InsertDepRace,
	} {
		t.Run(name, func(t *testing.T) {
			ns := redistest.Namespace(t, url)
			a := openURL(t, url, ns, WithAutoMigrate())
			b, c := openURL(t, url, ns), openURL(t, url, ns)
			race(t, a, b, c)
		})
	}
}

// The identity stays across reopening, and Redis' own clock (no WithClock) drives the scripts.
func TestIdentityAndServerTime(t *testing.T) {
	url := redistest.URL(t)
	ns := redistest.Namespace(t, url)
	a := openURL(t, url, ns, WithAutoMigrate())
	ida, err := a.Identity(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	b := openURL(t, url, ns)
	if idb, err := b.Identity(t.Context()); err != nil || idb != ida {
		t.Fatalf("Identity on reopening = %q, %v; want %q", idb, err, ida)
	}
	before := time.Now().Add(-time.Second)
	res, err := b.Insert(t.Context(), []store.InsertParams{job("k")})
	if err != nil {
		t.Fatal(err)
	}
	if at := res[0].Job.CreatedAt; at.Before(before) || at.After(time.Now().Add(time.Second)) {
		t.Fatalf("CreatedAt %v from Redis' TIME, want about now", at)
	}
	rows, err := a.Claim(t.Context(), store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 1, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(rows) != 1 {
		t.Fatalf("Claim = %d, %v", len(rows), err)
	}
	now, err := a.Now(t.Context())
	if err != nil || now.Before(before) {
		t.Fatalf("Now = %v, %v", now, err)
	}
}

// TestIdsStayGaplessPastDuplicates: an insert reserves its ids in one step and gives back those
// its duplicates did not use, so the next call's first id follows the last one used.
func TestIdsStayGaplessPastDuplicates(t *testing.T) {
	s := open(t)
	unique := job("k")
	unique.UniqueKey = "once"
	first, err := s.Insert(t.Context(), []store.InsertParams{unique, job("k"), unique, unique})
	if err != nil {
		t.Fatal(err)
	}
	if first[0].Duplicate || first[1].Duplicate || !first[2].Duplicate || !first[3].Duplicate {
		t.Fatalf("duplicates = %v %v %v %v, want only the last two", first[0].Duplicate, first[1].Duplicate, first[2].Duplicate, first[3].Duplicate)
	}
	if got, want := first[1].Job.ID, first[0].Job.ID+1; got != want {
		t.Errorf("second new job's id = %d, want %d", got, want)
	}
	next, err := s.Insert(t.Context(), []store.InsertParams{job("k")})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := next[0].Job.ID, first[1].Job.ID+1; got != want {
		t.Errorf("next call's id = %d, want %d: the ids its duplicates reserved were not given back", got, want)
	}
}

// The library remembers which kinds a Store's inserts named for a queue, so that an insert of
// a known kind makes no call for it (addKindOnce). A namespace whose keys were all deleted, then migrated again,
// has its kinds named again by its first insert: QueueStats finds the queue's oldest available
// job at the heads of the ready sets of the kinds named there.
func TestKindsNamedAgainAfterFlush(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	insert := func() {
		t.Helper()
		if _, err := s.Insert(ctx, []store.InsertParams{job("k")}); err != nil {
			t.Fatal(err)
		}
	}
	insert()
	insert() // remembered now: this one made no call for the kind
	keys, err := s.rdb.Keys(ctx, s.prefix+"*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys of the namespace: %v, %v", keys, err)
	}
	if err := s.rdb.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	insert()
	wantKindListed(t, s, "default")
}

// The library remembers naming a kind for one second of the store's time: a name taken out
// where this library does not see it (a prune on another primary, replicated here) is named
// again by the first insert of the kind in a later second, and the queue is listed again.
func TestKindsNamedAgainNextSecond(t *testing.T) {
	clk := clockwork.NewFakeClockAt(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
	s := open(t, WithClock(clk))
	ctx := t.Context()
	insert := func() {
		t.Helper()
		if _, err := s.Insert(ctx, []store.InsertParams{job("k")}); err != nil {
			t.Fatal(err)
		}
	}
	named := func() bool {
		t.Helper()
		ok, err := s.rdb.SIsMember(ctx, s.prefix+"kq:default", "k").Result()
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	insert()
	if err := s.rdb.Del(ctx, s.prefix+"kq:default").Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.SRem(ctx, s.prefix+"queues", "default").Err(); err != nil {
		t.Fatal(err)
	}
	insert() // the same second: remembered, no call for the kind
	if named() {
		t.Fatal("kind named again within the second it was remembered in; the library remembers nothing")
	}
	clk.Advance(time.Second)
	insert()
	if !named() {
		t.Fatal("kind not named again by an insert a second later")
	}
	if ok, err := s.rdb.SIsMember(ctx, s.prefix+"queues", "default").Result(); err != nil || !ok {
		t.Fatalf("queue listed again: %v, %v; want true", ok, err)
	}
}

// Stores on two databases of one server may share a namespace's name, and one function library
// serves both: each names the kinds of its inserts in its own database, whatever the other
// inserted within the same second.
func TestKindsNamedPerDatabase(t *testing.T) {
	url, _ := redistest.Server(t) // a private server: its databases are this test's
	a := openURL(t, url, "shared", WithAutoMigrate())
	b := openURL(t, strings.TrimSuffix(url, "/0")+"/1", "shared", WithAutoMigrate())
	ctx := t.Context()
	insert := func(s *Store, queue string) {
		t.Helper()
		p := job("k")
		p.Queue = queue
		if _, err := s.Insert(ctx, []store.InsertParams{p}); err != nil {
			t.Fatal(err)
		}
	}
	insert(a, "default") // each namespace's first insert starts its id counter
	insert(b, "default")
	insert(a, "q2")
	insert(b, "q2")
	wantKindListed(t, b, "q2")
}

// wantKindListed checks that s names kind k for queue, where QueueStats finds the oldest
// available job, and that QueueStats lists queue with its one available job and that job's time.
func wantKindListed(t *testing.T, s *Store, queue string) {
	t.Helper()
	ctx := t.Context()
	if ok, err := s.rdb.SIsMember(ctx, s.prefix+"kq:"+queue, "k").Result(); err != nil || !ok {
		t.Fatalf("kind k named in kq:%s: %v, %v; want true", queue, ok, err)
	}
	stats, err := s.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range stats {
		if q.Queue == queue {
			if q.Counts[store.StateAvailable] != 1 || q.OldestAvailable.IsZero() {
				t.Fatalf("%s: %+v, want one available job and its time", queue, q)
			}
			return
		}
	}
	t.Fatalf("QueueStats = %+v, want %s listed", stats, queue)
}
