package postgres

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
)

// A job inserted in the caller's transaction exists if and only if that transaction commits,
// and the caller's other writes share its fate.
func TestInsertTxPgx(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	if _, err := s.pool.Exec(ctx, s.sql(`CREATE TABLE {schema}.orders (id int)`)); err != nil {
		t.Fatal(err)
	}
	insert := func(commit bool) int64 {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, s.sql(`INSERT INTO {schema}.orders VALUES (1)`)); err != nil {
			t.Fatal(err)
		}
		res, err := s.InsertTx(ctx, tx, []store.InsertParams{job("k")})
		if err != nil {
			t.Fatalf("InsertTx: %v", err)
		}
		// Not visible outside the transaction before it commits.
		if _, err := s.Get(ctx, res[0].Job.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("job visible before commit: %v", err)
		}
		if commit {
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return res[0].Job.ID
	}
	rolledBack := insert(false)
	if _, err := s.Get(ctx, rolledBack); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("job of a rolled-back transaction: %v", err)
	}
	committed := insert(true)
	if j := mustGet(t, s, committed); j.State != store.StateAvailable {
		t.Fatalf("committed job: %+v", j)
	}
	var orders int
	s.pool.QueryRow(ctx, s.sql(`SELECT count(*) FROM {schema}.orders`)).Scan(&orders)
	if orders != 1 || countJobs(t, s) != 1 {
		t.Fatalf("%d orders, %d jobs; want 1 and 1", orders, countJobs(t, s))
	}
}

// database/sql users on pgx's stdlib driver pass their *sql.Tx; everything the insert path does
// (arrays, unique keys, supersede) works through it.
func TestInsertTxDatabaseSQL(t *testing.T) {
	clk := clockwork.NewFakeClockAt(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC))
	s := open(t, WithClock(clk))
	ctx := t.Context()
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()

	p := job("k")
	p.Tags, p.Metadata, p.ExpiresAt = []string{"a", "b"}, []byte(`{"m":1}`), clk.Now().Add(time.Hour)
	keyed := job("k")
	keyed.UniqueKey = "once"

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.InsertTx(ctx, tx, []store.InsertParams{p, keyed, keyed})
	if err != nil {
		t.Fatalf("InsertTx: %v", err)
	}
	if res[0].Duplicate || res[1].Duplicate || !res[2].Duplicate || res[2].Job.ID != res[1].Job.ID {
		t.Fatalf("results %+v %+v %+v", res[0], res[1], res[2])
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if n := countJobs(t, s); n != 0 {
		t.Fatalf("%d jobs after rollback", n)
	}

	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err = s.InsertTx(ctx, tx, []store.InsertParams{p, keyed})
	if err != nil {
		t.Fatalf("InsertTx: %v", err)
	}
	// The duplicate path reads a whole job back through database/sql.
	dup, err := s.InsertTx(ctx, tx, []store.InsertParams{keyed})
	if err != nil || !dup[0].Duplicate || dup[0].Job.ID != res[1].Job.ID || dup[0].Job.UniqueKey != "once" {
		t.Fatalf("duplicate in the same transaction: %+v, %v", dup, err)
	}
	sup := keyed
	sup.Supersede = true
	sres, err := s.InsertTx(ctx, tx, []store.InsertParams{sup})
	if err != nil || sres[0].Duplicate {
		t.Fatalf("supersede: %+v, %v", sres, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, s, res[0].Job.ID)
	if !slices.Equal(got.Tags, p.Tags) || string(got.Metadata) != `{"m":1}` || !got.ExpiresAt.Equal(p.ExpiresAt) {
		t.Fatalf("job read back: %+v", got)
	}
	if old := mustGet(t, s, res[1].Job.ID); old.State != store.StateCancelled {
		t.Fatalf("superseded job: %s", old.State)
	}

	// database/sql cannot COPY: a large batch goes in several multi-row statements.
	before := countJobs(t, s)
	many := make([]store.InsertParams, maxRowsPerStatement+10)
	for i := range many {
		many[i] = job("k")
	}
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err = s.InsertTx(ctx, tx, many)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, res[len(res)-1].Job.ID); got.ID != res[len(res)-1].Job.ID {
		t.Fatalf("last job of the batch: %+v", got)
	}
	if n := countJobs(t, s); n != before+len(many) {
		t.Fatalf("%d jobs, want %d", n, before+len(many))
	}
}

func TestInsertTxWrongType(t *testing.T) {
	s := open(t)
	if _, err := s.InsertTx(t.Context(), "not a tx", []store.InsertParams{job("k")}); err == nil {
		t.Fatal("InsertTx accepted a string")
	}
}

// Large batches go through COPY; the rows read back equal the rows Insert returned, and unique
// jobs in the same call still go through the unique path in the same transaction.
func TestInsertCopy(t *testing.T) {
	clk := clockwork.NewFakeClockAt(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC))
	s := open(t, WithClock(clk))
	n := copyMinRows + 10
	ps := make([]store.InsertParams, n)
	for i := range ps {
		ps[i] = job("k")
		ps[i].Args = fmt.Appendf(nil, `{"i": %d}`, i)
		ps[i].Priority = i % 5
		switch i % 4 {
		case 1:
			ps[i].RunAt = clk.Now().Add(time.Duration(i) * time.Second)
			ps[i].ExpiresAt = clk.Now().Add(time.Hour + 123456789*time.Nanosecond)
		case 2:
			ps[i].Tags, ps[i].Metadata = []string{"x", fmt.Sprint(i)}, []byte(`{"trace": "t"}`)
		case 3:
			ps[i].RunAt = clk.Now().Add(-time.Minute)
		}
	}
	ps[7].UniqueKey, ps[9].UniqueKey = "u", "u"
	res := mustInsert(t, s, ps...)
	if !res[9].Duplicate || res[9].Job.ID != res[7].Job.ID {
		t.Fatalf("in-batch duplicate: %+v, first %+v", res[9], res[7])
	}
	if got := countJobs(t, s); got != n-1 {
		t.Fatalf("%d jobs, want %d", got, n-1)
	}
	for i, r := range res {
		got := mustGet(t, s, r.Job.ID)
		want := r.Job
		if got.State != want.State || !got.RunAt.Equal(want.RunAt) || !got.CreatedAt.Equal(want.CreatedAt) ||
			!got.ExpiresAt.Equal(want.ExpiresAt) || string(got.Args) != string(want.Args) ||
			!slices.Equal(got.Tags, want.Tags) || string(got.Metadata) != string(want.Metadata) ||
			got.Priority != want.Priority || got.Kind != want.Kind || got.MaxAttempts != want.MaxAttempts {
			t.Fatalf("job %d read back\n got %+v\nwant %+v", i, got, want)
		}
		if !r.Duplicate && string(got.Args) != string(ps[i].Args) {
			t.Fatalf("job %d: Args %s, want %s", i, got.Args, ps[i].Args)
		}
		if !r.Duplicate && i%4 == 1 && got.State != store.StateScheduled {
			t.Fatalf("delayed job %d is %s", i, got.State)
		}
	}
}

// Many concurrent superseding inserts of one key leave exactly one job holding it, and every
// other job they created cancelled.
func TestSupersedeConcurrent(t *testing.T) {
	s := open(t)
	const n = 20
	errs := make(chan error, n)
	for range n {
		go func() {
			p := job("k")
			p.UniqueKey, p.Supersede = "latest", true
			_, err := s.Insert(t.Context(), []store.InsertParams{p})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	live, err := s.List(t.Context(), store.ListParams{States: []store.State{store.StateAvailable}})
	if err != nil || len(live) != 1 {
		t.Fatalf("%d available jobs (%v), want 1", len(live), err)
	}
	if c := countJobs(t, s); c != n {
		t.Fatalf("%d jobs, want %d (1 live, %d superseded)", c, n, n-1)
	}
}

// Without WithClock the database's clock decides: a job delayed by an hour of real time is
// scheduled and not claimable, one without RunAt is available at the server's now.
func TestDatabaseClock(t *testing.T) {
	s := open(t)
	before := time.Now().Add(-time.Minute) // generous: the server's clock is not ours
	later := job("k")
	later.RunAt = time.Now().Add(time.Hour)
	res := mustInsert(t, s, job("k"), later)
	if res[0].Job.State != store.StateAvailable || res[1].Job.State != store.StateScheduled {
		t.Fatalf("states %s, %s", res[0].Job.State, res[1].Job.State)
	}
	if c := res[0].Job.CreatedAt; c.Before(before) || c.After(time.Now().Add(time.Minute)) {
		t.Fatalf("CreatedAt %v is not the server's now", c)
	}
	got, err := s.Claim(t.Context(), store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 10, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(got) != 1 || got[0].ID != res[0].Job.ID {
		t.Fatalf("Claim = %v, %v; want only the available job", got, err)
	}
	if d := got[0].LeaseUntil.Sub(got[0].AttemptedAt); d != time.Minute {
		t.Fatalf("lease of %v, want 1m", d)
	}
}

// Args, metadata and results keep the producer's bytes: json, not jsonb.
func TestJSONVerbatim(t *testing.T) {
	s := open(t)
	p := job("k")
	p.Args = []byte(`{"b": 1,  "a": [2, 1]}`)
	j := mustInsert(t, s, p)[0].Job
	if got := mustGet(t, s, j.ID); string(got.Args) != string(p.Args) {
		t.Fatalf("Args = %s, want %s", got.Args, p.Args)
	}
	c, err := s.Claim(t.Context(), store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 1, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(c) != 1 {
		t.Fatal(c, err)
	}
	// A result that is not JSON does not fail the batch: it is kept as a JSON string.
	applied, err := s.Complete(t.Context(), []store.Outcome{{ID: j.ID, Fence: c[0].Fence, State: store.StateCompleted, Result: []byte("plain text")}})
	if err != nil || !applied[0] {
		t.Fatalf("Complete = %v, %v", applied, err)
	}
	if got := mustGet(t, s, j.ID); string(got.Result) != `"plain text"` {
		t.Fatalf("Result = %s", got.Result)
	}
}

// A unique insert in a caller's transaction waits for a concurrent one of the same key and
// then returns its job.
func TestUniqueWaitsForConcurrentTx(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	p := job("k")
	p.UniqueKey = "k1"
	tx, pid := openTx(t, s)
	first, err := s.InsertTx(ctx, tx, []store.InsertParams{p})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		res []store.InsertResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := s.Insert(ctx, []store.InsertParams{p})
		done <- result{res, err}
	}()
	waitBlockedBy(t, s, pid, "the concurrent insert")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || !r.res[0].Duplicate || r.res[0].Job.ID != first[0].Job.ID {
		t.Fatalf("concurrent insert: %+v, %v; want a duplicate of %d", r.res, r.err, first[0].Job.ID)
	}
}

// Superseding reads the holders of a key without a lock, so by the time its UPDATE gets a row,
// the job may no longer hold the key (it ended, and was retried without it while another job
// took the key): the UPDATE leaves such a job alone.
func TestSupersedeSparesAJobThatNoLongerHoldsItsKey(t *testing.T) {
	ctx := t.Context()
	s := open(t)
	p := job("k")
	p.UniqueKey = "report"
	j := mustInsert(t, s, p)[0].Job
	if _, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.jobs SET unique_states = '{}' WHERE id = $1`), j.ID); err != nil {
		t.Fatal(err)
	}
	rs, err := s.pool.Query(ctx, s.sql(supersedeSQL), s.now(), []int64{j.ID})
	if err != nil {
		t.Fatal(err)
	}
	var (
		now       time.Time
		cancelled []int64
		notified  int64
	)
	if err := scanOne(rs, &now, &cancelled, &notified); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, j.ID); len(cancelled) != 0 || got.State != store.StateAvailable {
		t.Fatalf("superseding a job that holds no key: cancelled %v, job %s; want it left available", cancelled, got.State)
	}
}
