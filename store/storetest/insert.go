package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

var insertTests = map[string]func(*testing.T, *env){
	"EveryFieldReadsBack": testInsertEveryField,
	"PlainRunReadsBack":   testInsertPlainRun,
	"ManyInOneCall":       testInsertMany,
	"MixedCallReadsBack":  testInsertMixedCall,
	"Delayed":             testInsertDelayed,
	"PastRunAt":           testInsertPastRunAt,
	"Empty":               testInsertEmpty,
}

func testInsertEveryField(t *testing.T, e *env) {
	p := store.InsertParams{
		Kind: "k", Queue: "mail", Args: []byte(`{"to": "a@b.c", "n": [1, 2]}`),
		Priority: 5, MaxAttempts: 7, ExpiresAt: e.now().Add(time.Hour),
		Tags: []string{"t1", "t2"}, Metadata: []byte(`{"trace": "abc"}`),
	}
	res := e.insertResults(p)
	if res[0].Duplicate {
		t.Error("a fresh insert reported Duplicate")
	}
	want := &store.JobRow{
		ID: res[0].Job.ID, Kind: "k", Queue: "mail", Args: p.Args, Priority: 5,
		State: store.StateAvailable, MaxAttempts: 7, RunAt: e.now(), ExpiresAt: p.ExpiresAt,
		Tags: p.Tags, Metadata: p.Metadata, CreatedAt: e.now(),
	}
	if want.ID <= 0 {
		t.Fatalf("id %d, want > 0", want.ID)
	}
	sameJob(t, res[0].Job, want)
	sameJob(t, e.get(want.ID), want)
}

// Jobs alike but for their args, with every field such a run may share (tags, metadata,
// priority, attempts, a RunAt), read back as inserted, alone and several in one call: a store
// may write such runs by a path of their own.
func testInsertPlainRun(t *testing.T, e *env) {
	base := store.InsertParams{
		Kind: "k", Queue: "mail", Priority: 3, MaxAttempts: 4, RunAt: e.now().Add(time.Hour),
		Tags: []string{"t1"}, Metadata: []byte(`{"m": 1}`),
	}
	for _, n := range []int{1, 3} {
		ps := make([]store.InsertParams, n)
		for i := range ps {
			ps[i] = base
			ps[i].Args = fmt.Appendf(nil, `{"i": %d}`, i)
		}
		for i, r := range e.insertResults(ps...) {
			want := &store.JobRow{
				ID: r.Job.ID, Kind: "k", Queue: "mail", Args: ps[i].Args, Priority: 3,
				State: store.StateScheduled, MaxAttempts: 4, RunAt: base.RunAt,
				Tags: base.Tags, Metadata: base.Metadata, CreatedAt: e.now(),
			}
			sameJob(t, r.Job, want)
			sameJob(t, e.get(r.Job.ID), want)
		}
	}
	e.advance(time.Hour)
	if got := e.claim("mail", 10); len(got) != 4 {
		t.Fatalf("claimed %d jobs once RunAt came, want the 4 inserted", len(got))
	}
}

func testInsertMany(t *testing.T, e *env) {
	const n = 5000
	ps := make([]store.InsertParams, n)
	for i := range ps {
		ps[i] = job("k")
		ps[i].Args = fmt.Appendf(nil, `{"i":%d}`, i)
		ps[i].Priority = i % 3
	}
	rows := e.insert(ps...)
	seen := make(map[int64]bool, n)
	for i, j := range rows {
		wantJSON(t, fmt.Sprintf("result %d Args", i), j.Args, ps[i].Args)
		if j.Priority != ps[i].Priority || j.State != store.StateAvailable {
			t.Fatalf("result %d: %+v", i, j)
		}
		if seen[j.ID] {
			t.Fatalf("id %d returned twice", j.ID)
		}
		seen[j.ID] = true
	}
	all := e.listAll(store.ListParams{})
	if len(all) != n {
		t.Fatalf("List found %d jobs, want %d", len(all), n)
	}
	for _, j := range all {
		if !seen[j.ID] {
			t.Fatalf("List returned id %d that Insert did not", j.ID)
		}
	}
	for _, i := range []int{0, n / 2, n - 1} {
		wantJSON(t, "stored Args", e.get(rows[i].ID).Args, ps[i].Args)
	}
}

// One call of jobs that differ field by field, with runs of alike jobs between others (a unique
// key, its duplicate, an expiry): each result is the row as stored, in the call's order, and the
// new jobs' ids rise in that order.
func testInsertMixedCall(t *testing.T, e *env) {
	with := func(f func(*store.InsertParams)) store.InsertParams {
		p := job("k")
		f(&p)
		return p
	}
	ps := []store.InsertParams{
		job("k"), job("k"),
		with(func(p *store.InsertParams) { p.Tags = []string{"a"} }),
		with(func(p *store.InsertParams) { p.Tags = []string{"a"}; p.Args = []byte(`{"n":2}`) }),
		with(func(p *store.InsertParams) { p.Tags = []string{"b"}; p.Metadata = []byte(`{"m":1}`) }),
		job("other"),
		with(func(p *store.InsertParams) { p.UniqueKey = "u" }),
		with(func(p *store.InsertParams) { p.UniqueKey = "u"; p.Args = []byte(`{"n":3}`) }),
		with(func(p *store.InsertParams) { p.RunAt = e.now().Add(time.Hour) }),
		with(func(p *store.InsertParams) { p.RunAt = e.now().Add(time.Hour) }),
		with(func(p *store.InsertParams) { p.Priority = 2 }),
		with(func(p *store.InsertParams) { p.MaxAttempts = 9 }),
		with(func(p *store.InsertParams) { p.Queue = "mail" }),
		with(func(p *store.InsertParams) { p.ExpiresAt = e.now().Add(time.Hour) }),
		job("k"),
	}
	res := e.insertResults(ps...)
	var last int64
	for i, r := range res {
		if dup := i == 7; r.Duplicate != dup {
			t.Fatalf("result %d: Duplicate %v, want %v", i, r.Duplicate, dup)
		}
		if r.Duplicate {
			if r.Job.ID != res[6].Job.ID {
				t.Errorf("result %d: duplicate of job %d, want %d", i, r.Job.ID, res[6].Job.ID)
			}
			continue
		}
		p := ps[i]
		want := &store.JobRow{
			ID: r.Job.ID, Kind: p.Kind, Queue: p.Queue, Args: p.Args, Priority: p.Priority,
			State: store.StateAvailable, MaxAttempts: p.MaxAttempts, RunAt: e.now(), ExpiresAt: p.ExpiresAt,
			UniqueKey: p.UniqueKey, Tags: p.Tags, Metadata: p.Metadata, CreatedAt: e.now(),
		}
		if !p.RunAt.IsZero() {
			want.State, want.RunAt = store.StateScheduled, p.RunAt
		}
		if r.Job.ID <= last {
			t.Errorf("result %d: id %d after %d", i, r.Job.ID, last)
		}
		last = r.Job.ID
		sameJob(t, r.Job, want)
		sameJob(t, e.get(r.Job.ID), want)
	}
}

// A job with a future RunAt is scheduled, and becomes claimable when RunAt comes, with no other
// call in between (no promotion pass).
func testInsertDelayed(t *testing.T, e *env) {
	p := job("k")
	p.RunAt = e.now().Add(time.Hour)
	j := e.insertOne(p)
	wantState(t, j, store.StateScheduled)
	wantTime(t, "RunAt", j.RunAt, p.RunAt)
	wantState(t, e.get(j.ID), store.StateScheduled)

	if got := e.claim("default", 10); len(got) != 0 {
		t.Fatalf("claimed %d jobs before RunAt", len(got))
	}
	e.advance(time.Hour - time.Second)
	if got := e.claim("default", 10); len(got) != 0 {
		t.Fatalf("claimed %d jobs a second before RunAt", len(got))
	}
	e.advance(2 * time.Second)
	if got := e.claimOne(); got.ID != j.ID {
		t.Fatalf("claimed job %d, want %d", got.ID, j.ID)
	}
}

// A RunAt in the past gives an available job that keeps its RunAt, so it goes ahead of newer jobs.
func testInsertPastRunAt(t *testing.T, e *env) {
	newer := e.insertOne(job("k"))
	p := job("k")
	p.RunAt = e.now().Add(-time.Minute)
	older := e.insertOne(p)
	wantState(t, older, store.StateAvailable)
	wantTime(t, "RunAt", e.get(older.ID).RunAt, p.RunAt)
	if got := e.claimOne(); got.ID != older.ID {
		t.Fatalf("claimed %d, want the job with the older RunAt %d (newer: %d)", got.ID, older.ID, newer.ID)
	}
}

func testInsertEmpty(t *testing.T, e *env) {
	res, err := e.s.Insert(e.ctx, nil)
	if err != nil || len(res) != 0 {
		t.Fatalf("Insert(nil) = %v, %v; want no results, no error", res, err)
	}
}
