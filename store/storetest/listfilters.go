package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

// The filters of ListParams beyond state, queue, kind and workflow: each alone, combined with the
// others, and paged in both directions.
var listFilterTests = map[string]func(*testing.T, *env){
	"Tag":          testListTag,
	"Schedule":     testListSchedule,
	"Owner":        testListOwner,
	"ArgsContains": testListArgsContains,
	"ArgsPath":     testListArgsPath,
	"Created":      testListCreated,
	"Combined":     testListCombined,
	"Invalid":      testListInvalid,
}

func withArgs(args string, tags ...string) store.InsertParams {
	p := job("k")
	p.Args, p.Tags = []byte(args), tags
	return p
}

// wantIDs fails unless List(p) returns want, and pages of one find the same in both directions.
func wantIDs(t *testing.T, e *env, p store.ListParams, want ...int64) {
	t.Helper()
	if got := ids(e.list(p)); !slices.Equal(got, want) {
		t.Fatalf("List(%+v) = %v, want %v", p, got, want)
	}
	p.Limit = 1
	if got := ids(e.listAll(p)); !slices.Equal(got, want) {
		t.Fatalf("List(%+v) paged = %v, want %v", p, got, want)
	}
	p.Desc = true
	rev := slices.Clone(want)
	slices.Reverse(rev)
	if got := ids(e.listAll(p)); !slices.Equal(got, rev) {
		t.Fatalf("List(%+v) paged = %v, want %v", p, got, rev)
	}
}

func testListTag(t *testing.T, e *env) {
	js := e.insert(withArgs(`{}`, "red", "blue"), withArgs(`{}`), withArgs(`{}`, "blue"),
		withArgs(`{}`, "reddish"))
	wantIDs(t, e, store.ListParams{Tag: "blue"}, js[0].ID, js[2].ID)
	wantIDs(t, e, store.ListParams{Tag: "red"}, js[0].ID)
	wantIDs(t, e, store.ListParams{Tag: "green"})
}

// Owner lists the jobs running under a node's claim, and not those it ran before.
func testListOwner(t *testing.T, e *env) {
	e.insert(job("k"), job("k"), job("k"), job("k"))
	mine := e.claimParams(store.ClaimParams{Queue: "default", Kinds: kinds, Max: 2, Owner: "node-a", LeaseFor: time.Minute})
	other := e.claimParams(store.ClaimParams{Queue: "default", Kinds: kinds, Max: 1, Owner: "node-b", LeaseFor: time.Minute})
	if len(mine) != 2 || len(other) != 1 {
		t.Fatalf("claimed %d and %d jobs, want 2 and 1", len(mine), len(other))
	}
	wantIDs(t, e, store.ListParams{Owner: "node-a"}, mine[0].ID, mine[1].ID)
	wantIDs(t, e, store.ListParams{Owner: "node-b", States: []store.State{store.StateRunning}}, other[0].ID)
	e.complete(store.Outcome{ID: mine[0].ID, Fence: mine[0].Fence, State: store.StateCompleted})
	wantIDs(t, e, store.ListParams{Owner: "node-a"}, mine[1].ID)
	wantIDs(t, e, store.ListParams{Owner: "node-c"})
}

func testListSchedule(t *testing.T, e *env) {
	e.upsertSchedule(cronSchedule("s"))
	e.upsertSchedule(cronSchedule("s2"))
	now := e.now()
	e.insertOne(job("k"))
	e.plan("s", never, now.Add(time.Second), occurrence("s", now), occurrence("s", now.Add(time.Second)))
	e.plan("s2", never, now, occurrence("s2", now))
	s := e.planned("s")
	if len(s) != 2 {
		t.Fatalf("planned %d jobs for s, want 2", len(s))
	}
	wantIDs(t, e, store.ListParams{Schedule: "s"}, s[0].ID, s[1].ID)
	wantIDs(t, e, store.ListParams{Schedule: "s", States: []store.State{store.StateScheduled}}, s[1].ID)
	wantIDs(t, e, store.ListParams{Schedule: "none"})
}

func testListArgsContains(t *testing.T, e *env) {
	js := e.insert(withArgs(`{"customer":"acme","n":1}`), withArgs(`{"customer":"Acme"}`),
		withArgs(`{"note":"acme corp"}`), withArgs(`{"n":2}`))
	wantIDs(t, e, store.ListParams{ArgsContains: "acme"}, js[0].ID, js[2].ID)
	wantIDs(t, e, store.ListParams{ArgsContains: `"customer"`}, js[0].ID, js[1].ID)
	wantIDs(t, e, store.ListParams{ArgsContains: "%"})
	wantIDs(t, e, store.ListParams{ArgsContains: "_"})
}

func testListArgsPath(t *testing.T, e *env) {
	js := e.insert(
		withArgs(`{"account":{"id":42,"name":"acme","vip":true}}`),
		withArgs(`{"account":{"id":"42","name":"other","vip":false}}`),
		withArgs(`{"account":{"id":7}}`),
		withArgs(`{"account":[{"id":42}]}`),
		withArgs(`{"account.id":42}`),
		withArgs(`{"id":42}`),
		// An object or array is not the string of its JSON text; args nested deeper than a
		// store's JSON reader goes match nothing rather than failing the List.
		withArgs(`{"account":{"id":{"b":1}}}`),
		withArgs(`{"account":{"id":[1,2]}}`),
		withArgs(`{"deep":`+strings.Repeat(`[`, 1500)+strings.Repeat(`]`, 1500)+`}`),
	)
	wantIDs(t, e, store.ListParams{ArgsPath: "account.id", ArgsValue: `"{\"b\":1}"`})
	wantIDs(t, e, store.ListParams{ArgsPath: "account.id", ArgsValue: `"[1,2]"`})
	wantIDs(t, e, store.ListParams{ArgsPath: "account.id", ArgsValue: `42`}, js[0].ID)
	wantIDs(t, e, store.ListParams{ArgsPath: "account.id", ArgsValue: `"42"`}, js[1].ID)
	wantIDs(t, e, store.ListParams{ArgsPath: "account.name", ArgsValue: `"acme"`}, js[0].ID)
	wantIDs(t, e, store.ListParams{ArgsPath: "account.vip", ArgsValue: `true`}, js[0].ID)
	wantIDs(t, e, store.ListParams{ArgsPath: "account.vip", ArgsValue: `false`}, js[1].ID)
	wantIDs(t, e, store.ListParams{ArgsPath: "id", ArgsValue: `42`}, js[5].ID)
	wantIDs(t, e, store.ListParams{ArgsPath: "account.missing", ArgsValue: `1`})
}

func testListCreated(t *testing.T, e *env) {
	t0 := e.now()
	a := e.insertOne(job("k"))
	e.advance(time.Minute)
	b := e.insertOne(job("k"))
	e.advance(time.Minute)
	c := e.insertOne(job("k"))
	t1, t2 := t0.Add(time.Minute), t0.Add(2*time.Minute)
	wantIDs(t, e, store.ListParams{CreatedAfter: t1}, b.ID, c.ID)
	wantIDs(t, e, store.ListParams{CreatedBefore: t1}, a.ID)
	wantIDs(t, e, store.ListParams{CreatedAfter: t1, CreatedBefore: t2}, b.ID)
	wantIDs(t, e, store.ListParams{CreatedAfter: t1, CreatedBefore: t1})
	wantIDs(t, e, store.ListParams{CreatedAfter: t2.Add(time.Microsecond)})
}

func testListCombined(t *testing.T, e *env) {
	var want []int64
	for i := range 12 {
		p := withArgs(`{"account":{"id":42},"note":"acme"}`, "t")
		switch i % 4 {
		case 1:
			p.Tags = nil
		case 2:
			p.Queue = "other"
		case 3:
			p.Kind = "a"
		}
		j := e.insertOne(p)
		if i%4 == 0 {
			want = append(want, j.ID)
		}
		e.insertOne(withArgs(`{"account":{"id":43},"note":"acme"}`, "t"))
	}
	claimed := e.claim("default", 1)[0]
	if claimed.ID != want[0] {
		t.Fatalf("claimed %d, want %d", claimed.ID, want[0])
	}
	p := store.ListParams{
		Tag: "t", Queue: "default", Kind: "k", ArgsContains: "acme", ArgsPath: "account.id",
		ArgsValue: "42", CreatedAfter: e.now().Add(-time.Hour), CreatedBefore: e.now().Add(time.Hour),
	}
	wantIDs(t, e, p, want...)
	p.States = []store.State{store.StateAvailable}
	wantIDs(t, e, p, want[1:]...)
	p.States = nil
	p.Desc, p.AfterID = true, want[2]
	if got := ids(e.list(p)); !slices.Equal(got, []int64{want[1], want[0]}) {
		t.Fatalf("List desc after %d = %v, want %v", want[2], got, []int64{want[1], want[0]})
	}
}

func testListInvalid(t *testing.T, e *env) {
	now := e.now()
	for _, p := range []store.ListParams{
		{ArgsPath: "account..id", ArgsValue: "1"},
		{ArgsPath: ".id", ArgsValue: "1"},
		{ArgsPath: "id.", ArgsValue: "1"},
		{ArgsPath: `a"b`, ArgsValue: "1"},
		{ArgsPath: "id"},
		{ArgsValue: "1"},
		{ArgsPath: "id", ArgsValue: "acme"},
		{ArgsPath: "id", ArgsValue: "null"},
		{ArgsPath: "id", ArgsValue: `{"a":1}`},
		{CreatedAfter: now, CreatedBefore: now.Add(-time.Second)},
		// Text no store keeps: NUL, and bytes that are not UTF-8.
		{Kind: "k\x00"}, {Queue: "\xff"}, {Tag: "\x00"}, {Workflow: "\xff"}, {Owner: "\x00"},
		{Schedule: "\x00"}, {ArgsContains: "\x00"}, {ArgsPath: "a\x00", ArgsValue: "1"},
		{ArgsPath: "a", ArgsValue: "\"\xff\""},
	} {
		if _, err := e.s.List(e.ctx, p); !errors.Is(err, store.ErrInvalidList) {
			t.Errorf("List(%+v) = %v, want ErrInvalidList", p, err)
		}
	}
}
