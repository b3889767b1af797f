package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

var statsTests = map[string]func(*testing.T, *env){
	"AddAndRead":      testStatsAddAndRead,
	"AddSums":         testStatsAddSums,
	"NodesApart":      testStatsNodesApart,
	"SinceAndPrune":   testStatsSinceAndPrune,
	"Names":           testStatsNames,
	"EmptyHistograms": testStatsEmptyHistograms,
}

// keeper is the store's StatsKeeper: every store of rota keeps the fleet's counts.
func (e *env) keeper() store.StatsKeeper {
	k, ok := e.s.(store.StatsKeeper)
	if !ok {
		e.t.Fatal("store does not implement store.StatsKeeper")
	}
	return k
}

func (e *env) addStats(rows ...store.Stats) {
	e.t.Helper()
	if err := e.keeper().AddStats(e.ctx, rows); err != nil {
		e.t.Fatalf("AddStats: %v", err)
	}
}

// readStats returns the rows since since, sorted by minute, node, queue and kind.
func (e *env) readStats(since time.Time) []store.Stats {
	e.t.Helper()
	rows, err := e.keeper().Stats(e.ctx, since)
	if err != nil {
		e.t.Fatalf("Stats: %v", err)
	}
	slices.SortFunc(rows, func(a, b store.Stats) int {
		if c := a.Minute.Compare(b.Minute); c != 0 {
			return c
		}
		return strings.Compare(a.Node+"\x00"+a.Queue+"\x00"+a.Kind, b.Node+"\x00"+b.Queue+"\x00"+b.Kind)
	})
	return rows
}

func sameStats(t *testing.T, got, want []store.Stats) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d:\n got  %+v\n want %+v", len(got), len(want), got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.Minute.Equal(w.Minute) || g.Node != w.Node || g.Queue != w.Queue || g.Kind != w.Kind ||
			g.Completed != w.Completed || g.Failed != w.Failed || g.Discarded != w.Discarded || g.Cancelled != w.Cancelled ||
			!slices.Equal(g.Latency, w.Latency) || !slices.Equal(g.Duration, w.Duration) {
			t.Errorf("row %d:\n got  %+v\n want %+v", i, g, w)
		}
	}
}

func statsRow(minute time.Time, node string) store.Stats {
	return store.Stats{Node: node, Minute: minute, Queue: "default", Kind: "email",
		Completed: 7, Failed: 2, Discarded: 1, Cancelled: 3,
		Latency: []int64{5, 0, 1}, Duration: []int64{0, 4, 0, 0, 2}}
}

// A row reads back as written, its minute truncated to the minute.
func testStatsAddAndRead(t *testing.T, e *env) {
	m := e.now().Truncate(time.Minute)
	r := statsRow(m.Add(17*time.Second), "n1")
	e.addStats(r)
	r.Minute = m
	sameStats(t, e.readStats(m), []store.Stats{r})
}

// Adding to a row sums its counts and its histograms bucket by bucket, the shorter padded; rows
// of one call that share a key add up too.
func testStatsAddSums(t *testing.T, e *env) {
	m := e.now().Truncate(time.Minute)
	e.addStats(statsRow(m, "n1"))
	more := store.Stats{Node: "n1", Minute: m, Queue: "default", Kind: "email", Completed: 1,
		Latency: []int64{1, 1, 1, 1}, Duration: []int64{1}}
	e.addStats(more, more)
	want := statsRow(m, "n1")
	want.Completed += 2
	want.Latency = []int64{7, 2, 3, 2}
	want.Duration = []int64{2, 4, 0, 0, 2}
	sameStats(t, e.readStats(m), []store.Stats{want})
}

// Each node, queue and kind has its rows: no node's counts land in another's.
func testStatsNodesApart(t *testing.T, e *env) {
	m := e.now().Truncate(time.Minute)
	a, b := statsRow(m, "n1"), statsRow(m, "n2")
	b.Completed = 100
	c := statsRow(m, "n1")
	c.Queue = "mail"
	d := statsRow(m, "n1")
	d.Kind = "sms"
	e.addStats(a, b, c, d)
	// Sorted by node, queue, kind.
	sameStats(t, e.readStats(m), []store.Stats{a, d, c, b})
}

// Stats reads the minutes from since on; PruneStats deletes those before its time, and says
// how many rows it deleted.
func testStatsSinceAndPrune(t *testing.T, e *env) {
	m := e.now().Truncate(time.Minute)
	var all []store.Stats
	for i := range 5 {
		r := statsRow(m.Add(time.Duration(i)*time.Minute), "n1")
		r2 := r
		r2.Node = "n2"
		all = append(all, r, r2)
	}
	e.addStats(all...)
	sameStats(t, e.readStats(m.Add(3*time.Minute)), all[6:])
	n, err := e.keeper().PruneStats(e.ctx, m.Add(2*time.Minute))
	if err != nil {
		t.Fatalf("PruneStats: %v", err)
	}
	if n != 4 {
		t.Errorf("PruneStats deleted %d rows, want 4", n)
	}
	sameStats(t, e.readStats(time.Time{}), all[4:])
}

// Queue, kind and node names are kept as given, separators and quotes included.
func testStatsNames(t *testing.T, e *env) {
	m := e.now().Truncate(time.Minute)
	r := statsRow(m, `node:"1"`)
	r.Queue, r.Kind = "q:with,odd|chars\t", `kind "x" [1]`
	e.addStats(r)
	sameStats(t, e.readStats(m), []store.Stats{r})
}

// A row with no histograms reads back with none, and a later histogram adds to it.
func testStatsEmptyHistograms(t *testing.T, e *env) {
	m := e.now().Truncate(time.Minute)
	r := store.Stats{Node: "n1", Minute: m, Queue: "default", Kind: "email", Cancelled: 1}
	e.addStats(r)
	sameStats(t, e.readStats(m), []store.Stats{r})
	e.addStats(store.Stats{Node: "n1", Minute: m, Queue: "default", Kind: "email", Latency: []int64{0, 2}})
	r.Latency = []int64{0, 2}
	sameStats(t, e.readStats(m), []store.Stats{r})
}
