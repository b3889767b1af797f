package postgres

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/pgtest"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
)

// patience bounds a wait for a notification that should come at once: a safeguard against a
// hung test, not a timing assumption.
const patience = 10 * time.Second

func subscribe(t *testing.T, s *Store) <-chan store.Notification {
	t.Helper()
	ch, err := s.Subscribe(t.Context())
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	return ch
}

// await reads notifications until one matches and returns the ones it skipped.
func await(t *testing.T, ch <-chan store.Notification, want store.Notification) []store.Notification {
	t.Helper()
	var skipped []store.Notification
	timeout := time.After(patience)
	for {
		select {
		case n, ok := <-ch:
			if !ok {
				t.Fatalf("channel closed while waiting for %+v", want)
			}
			if n == want {
				return skipped
			}
			skipped = append(skipped, n)
		case <-timeout:
			t.Fatalf("no %+v within %v (got %+v)", want, patience, skipped)
		}
	}
}

func claimAll(t *testing.T, s *Store, queue string) []*store.JobRow {
	t.Helper()
	jobs, err := s.Claim(t.Context(), store.ClaimParams{Queue: queue, Kinds: []string{"k"}, Max: 100, Owner: "n", LeaseFor: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// Two stores on one schema are two processes: an insert through one wakes a subscriber of the
// other, and a job finished through one wakes a Wait in the other.
func TestNotifyAcrossStores(t *testing.T) {
	schema := newSchema(t)
	a := openSchema(t, schema, WithAutoMigrate())
	b := openSchema(t, schema)
	ch := subscribe(t, b)

	p := job("k")
	p.Queue = "mail"
	j := mustInsert(t, a, p)[0].Job
	await(t, ch, store.Notification{Topic: store.TopicInsert, Queue: "mail"})

	c := claimAll(t, a, "mail")
	if _, err := a.Complete(t.Context(), []store.Outcome{{ID: j.ID, Fence: c[0].Fence, State: store.StateCompleted}}); err != nil {
		t.Fatal(err)
	}
	await(t, ch, store.Notification{Topic: store.TopicFinal, Queue: "mail", JobID: j.ID})

	// Cancelling a waiting job is final too.
	k := mustInsert(t, a, job("k"))[0].Job
	if _, err := a.Cancel(t.Context(), k.ID); err != nil {
		t.Fatal(err)
	}
	await(t, ch, store.Notification{Topic: store.TopicFinal, Queue: "default", JobID: k.ID})
}

// One completion call announces all its final jobs, however many, and only those.
func TestNotifyFinalBatch(t *testing.T) {
	s := open(t)
	ch := subscribe(t, s)
	ps := make([]store.InsertParams, 700) // more than one NOTIFY payload holds
	for i := range ps {
		ps[i] = job("k")
	}
	mustInsert(t, s, ps...)
	var outs []store.Outcome
	for {
		c := claimAll(t, s, "default")
		if len(c) == 0 {
			break
		}
		for _, j := range c {
			state := store.StateCompleted
			if j.ID%10 == 0 {
				state = store.StateRetryable
			}
			outs = append(outs, store.Outcome{ID: j.ID, Fence: j.Fence, State: state})
		}
	}
	if _, err := s.Complete(t.Context(), outs); err != nil {
		t.Fatal(err)
	}
	want := make(map[int64]bool)
	for _, o := range outs {
		if o.State == store.StateCompleted {
			want[o.ID] = true
		}
	}
	timeout := time.After(patience)
	for len(want) > 0 {
		select {
		case n := <-ch:
			if n.Topic != store.TopicFinal {
				continue
			}
			if n.JobID%10 == 0 {
				t.Fatalf("retryable job %d announced final", n.JobID)
			}
			if n.Queue != "default" {
				t.Fatalf("final notification %+v: want queue default", n)
			}
			delete(want, n.JobID)
		case <-timeout:
			t.Fatalf("%d final jobs not announced", len(want))
		}
	}
}

// Notifications of one schema do not reach the stores of another in the same database.
func TestNotifySchemasDoNotCross(t *testing.T) {
	a, b := open(t), open(t)
	ch := subscribe(t, b)
	pa := job("k")
	pa.Queue = "of-a"
	mustInsert(t, a, pa)
	pb := job("k")
	pb.Queue = "of-b"
	mustInsert(t, b, pb)
	// Notifications arrive in commit order: a's would come first.
	if skipped := await(t, ch, store.Notification{Topic: store.TopicInsert, Queue: "of-b"}); len(skipped) != 0 {
		t.Fatalf("store b got %+v from store a's schema", skipped)
	}
}

// After its connection is killed, the listener reconnects, tells its subscribers to look again
// (what was sent meanwhile is lost), and notifications flow again.
func TestListenerReconnect(t *testing.T) {
	s := open(t)
	pids := make(chan uint32, 8)
	s.listener.onListen = func(pid uint32) { pids <- pid }
	ch := subscribe(t, s)
	first := <-pids

	var killed bool
	if err := s.pool.QueryRow(t.Context(), `SELECT pg_terminate_backend($1)`, first).Scan(&killed); err != nil || !killed {
		t.Fatalf("pg_terminate_backend(%d) = %v, %v", first, killed, err)
	}
	select {
	case pid := <-pids:
		if pid == first {
			t.Fatalf("listening again on the killed backend %d", pid)
		}
	case <-time.After(patience):
		t.Fatal("listener did not reconnect")
	}
	await(t, ch, store.Notification{Topic: store.TopicInsert})
	await(t, ch, store.Notification{Topic: store.TopicChanged})
	// Through the listener: another Store's insert (this Store's own are announced locally).
	mustInsert(t, openSchema(t, s.Schema()), job("k"))
	await(t, ch, store.Notification{Topic: store.TopicInsert, Queue: "default"})
}

// A job that expires in a claim is announced final.
func TestNotifyExpired(t *testing.T) {
	clk := clockwork.NewFakeClockAt(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC))
	s := open(t, WithClock(clk))
	ch := subscribe(t, s)
	p := job("k")
	p.ExpiresAt = clk.Now().Add(time.Minute)
	j := mustInsert(t, s, p)[0].Job
	clk.Advance(2 * time.Minute)
	if got := claimAll(t, s, "default"); len(got) != 0 {
		t.Fatalf("claimed expired job: %v", got)
	}
	await(t, ch, store.Notification{Topic: store.TopicFinal, Queue: "default", JobID: j.ID})
	if got := mustGet(t, s, j.ID); got.State != store.StateExpired {
		t.Fatalf("state %s, want expired", got.State)
	}
}

// With WithPollOnly there is no listening connection: the subscription delivers nothing and
// ends with its context.
func TestPollOnly(t *testing.T) {
	s := open(t, WithPollOnly())
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := s.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mustInsert(t, s, job("k"))
	cancel()
	for n := range ch {
		t.Fatalf("poll-only store delivered %+v", n)
	}
	if s.listener.Running() {
		t.Fatal("poll-only store started a listener")
	}
}

// Close ends every subscription; Subscribe after Close fails.
func TestCloseEndsSubscriptions(t *testing.T) {
	s := open(t)
	ch := subscribe(t, s)
	s.Close()
	for range ch {
	}
	if _, err := s.Subscribe(t.Context()); err == nil {
		t.Fatal("Subscribe after Close succeeded")
	}
}

func TestNotifyGate(t *testing.T) {
	sent := make(chan []string, 4)
	clock := clockwork.NewFakeClock()
	g := newNotifyGate(clock, 20*time.Millisecond, func(q []string) { sent <- q })
	defer g.close()
	if got, later := g.take([]string{"a", "b"}); !slices.Equal(got, []string{"a", "b"}) || len(later) != 0 {
		t.Fatalf("first take = %v, %v; want both queues through", got, later)
	}
	// Within the interval nothing goes through; both queues are owed one NOTIFY once their
	// inserts committed, sent together.
	if got, later := g.take([]string{"b"}); len(got) != 0 || !slices.Equal(later, []string{"b"}) {
		t.Fatalf("second take = %v, %v; want b held back", got, later)
	}
	_, later := g.take([]string{"a", "b"})
	// Nothing is owed before the inserts committed: no timer runs.
	g.mu.Lock()
	armed, owed := g.timer != nil, len(g.owed)
	g.mu.Unlock()
	if armed || owed != 0 {
		t.Fatalf("before owe: timer armed %v, %d queues owed; want none", armed, owed)
	}
	g.owe(later)
	clock.Advance(20 * time.Millisecond)
	wantSent(t, sent, "a", "b")
	// A queue never seen goes straight through.
	if got, _ := g.take([]string{"c"}); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("take of a new queue = %v", got)
	}
	// An owed NOTIFY goes when the interval since the queue's last one ends, not an interval
	// after the insert committed: c's went at the take above, its insert commits 15 ms later,
	// and its owed NOTIFY follows 5 ms after that.
	_, later = g.take([]string{"c"})
	clock.Advance(15 * time.Millisecond)
	g.owe(later)
	clock.Advance(4 * time.Millisecond)
	// The fake clock drops a timer from its waiters inside Advance, before the timer's function
	// runs: the gate's timer still waiting is how this knows nothing went within the interval.
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal("the owed NOTIFY's timer fired 19 ms after the last NOTIFY, within the interval")
	}
	clock.Advance(time.Millisecond)
	wantSent(t, sent, "c")
	// An insert that took longer than the interval is announced as soon as it has committed.
	_, later = g.take([]string{"c"})
	clock.Advance(25 * time.Millisecond)
	g.owe(later)
	wantSent(t, sent, "c")

	open := newNotifyGate(clock, 0, func([]string) { t.Error("a gate with no interval owes nothing") })
	for range 3 {
		if got, _ := open.take([]string{"a"}); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("interval 0: take = %v", got)
		}
	}
}

// wantSent waits for the gate's next NOTIFY, which must be for queues.
func wantSent(t *testing.T, sent <-chan []string, queues ...string) {
	t.Helper()
	select {
	case q := <-sent:
		if !slices.Equal(q, queues) {
			t.Fatalf("owed NOTIFY for %v, want %v", q, queues)
		}
	case <-time.After(patience):
		t.Fatalf("the NOTIFY owed for %v was not sent", queues)
	}
}

// A schema name as long as PostgreSQL allows still gets channels of its own.
func TestLongSchemaName(t *testing.T) {
	long := newSchema(t) + "_"
	for len(long) < maxIdentifierLen {
		long += "x"
	}
	pgtest.Drop(t, testURL(), long)
	s := openSchema(t, long, WithAutoMigrate())
	if len(s.insertChannel) > maxIdentifierLen || s.insertChannel == channelName(long[:len(long)-1], "insert") {
		t.Fatalf("channel %q", s.insertChannel)
	}
	ch := subscribe(t, s)
	mustInsert(t, s, job("k"))
	await(t, ch, store.Notification{Topic: store.TopicInsert, Queue: "default"})
}

// An insert wakes the inserting Store's own subscribers at once, not through the server: here
// the gate holds the NOTIFY for an hour, and the subscriber is still woken. A job that is not
// due, and a duplicate, wake nobody.
func TestInsertAnnouncedLocally(t *testing.T) {
	s := open(t, WithNotifyInterval(time.Hour))
	ch := subscribe(t, s)
	s.gate.take([]string{"mail", "later"}) // NOTIFYs for these queues went out: the next wait an hour

	mustInsert(t, s, store.InsertParams{Kind: "k", Queue: "mail", MaxAttempts: 1})
	await(t, ch, store.Notification{Topic: store.TopicInsert, Queue: "mail"})

	unique := store.InsertParams{Kind: "k", Queue: "mail", MaxAttempts: 1, UniqueKey: "once"}
	mustInsert(t, s, unique)
	await(t, ch, store.Notification{Topic: store.TopicInsert, Queue: "mail"})
	if res := mustInsert(t, s, unique); !res[0].Duplicate {
		t.Fatal("second insert of a unique job was not a duplicate")
	}
	mustInsert(t, s, store.InsertParams{Kind: "k", Queue: "later", MaxAttempts: 1, RunAt: time.Now().Add(time.Hour)})
	mustInsert(t, s, store.InsertParams{Kind: "k", Queue: "other", MaxAttempts: 1})
	skipped := await(t, ch, store.Notification{Topic: store.TopicInsert, Queue: "other"})
	if len(skipped) > 0 {
		t.Fatalf("a duplicate or a job not due woke subscribers: %+v", skipped)
	}
}

// The NOTIFY of an Insert does not wake the inserting Store's subscribers a second time: Insert
// announced it to them already. A NOTIFY of anything else does reach them.
func TestOwnInsertNotifyNotDeliveredTwice(t *testing.T) {
	s := open(t)
	ch := subscribe(t, s)
	mustInsert(t, s, store.InsertParams{Kind: "k", Queue: "mail", MaxAttempts: 1})
	// The listener receives NOTIFYs in commit order: once the resume's has come, the insert's
	// came before it, or never will.
	if err := s.PauseQueue(t.Context(), "marker"); err != nil {
		t.Fatal(err)
	}
	if err := s.ResumeQueue(t.Context(), "marker"); err != nil {
		t.Fatal(err)
	}
	before := await(t, ch, store.Notification{Topic: store.TopicInsert, Queue: "marker"})
	mail := 0
	for _, n := range before {
		if n == (store.Notification{Topic: store.TopicInsert, Queue: "mail"}) {
			mail++
		}
	}
	if mail != 1 {
		t.Fatalf("%d insert notifications for mail, want 1 (the local announcement): %+v", mail, before)
	}
	// Another Store's insert is delivered.
	mustInsert(t, openSchema(t, s.Schema()), store.InsertParams{Kind: "k", Queue: "other", MaxAttempts: 1})
	await(t, ch, store.Notification{Topic: store.TopicInsert, Queue: "other"})
}

// A job inserted in a caller's transaction wakes the Store's own subscribers when it commits,
// even while the gate owes its queue a NOTIFY: the caller's transaction sends its own.
func TestInsertTxNotifiesAtCommit(t *testing.T) {
	s := open(t, WithNotifyInterval(time.Hour))
	ch := subscribe(t, s)
	s.gate.take([]string{"mail"}) // mail's NOTIFY went out just now: the gate holds the next for an hour
	tx, err := s.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context())
	if _, err := s.InsertTx(t.Context(), tx, []store.InsertParams{{Kind: "k", Queue: "mail", MaxAttempts: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	await(t, ch, store.Notification{Topic: store.TopicInsert, Queue: "mail"})
}
