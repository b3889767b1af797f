package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

var insertTests = map[string]func(*testing.T, *env){
	"EveryFieldReadsBack": testInsertEveryField,
	"ManyInOneCall":       testInsertMany,
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
