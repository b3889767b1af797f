package rota

import (
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
)

// Status marks a node not seen for two registration intervals as stale, and names the work no
// live node will run: a queue none serves, a kind none of the queue's nodes runs, a paused queue
// with jobs waiting. A dead node's registration does not count as serving.
func TestStatusMarksStaleNodesAndWarnsOfWorkNobodyRuns(t *testing.T) {
	ctx := t.Context()
	clock := clockwork.NewFakeClockAt(epoch)
	st := openStore(t, clock)
	c := NewClient(st, &ClientConfig{Clock: clock})
	register := func(id string, queues, kinds []string) {
		t.Helper()
		if err := st.RegisterNode(ctx, store.NodeInfo{ID: id, Host: "h", Queues: queues, Kinds: kinds, StartedAt: clock.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	register("dead", []string{"mail"}, []string{"send"})
	clock.Advance(StatusStaleAfter + time.Second)
	register("live", []string{"default", "reports"}, []string{"test"})
	for _, in := range []struct {
		args Args
		q    string
	}{{testArgs{}, "default"}, {RawArgs{KindName: "send", JSON: []byte(`{}`)}, "mail"},
		{RawArgs{KindName: "pdf", JSON: []byte(`{}`)}, "reports"}, {testArgs{}, "held"}} {
		if _, err := c.Insert(ctx, in.args, &InsertOpts{Queue: in.q}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.PauseQueue(ctx, "held"); err != nil {
		t.Fatal(err)
	}

	s, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stale := staleByID(s)
	if !stale["dead"] || stale["live"] || len(stale) != 2 {
		t.Fatalf("stale nodes %v, want dead only", stale)
	}
	var got []string
	for _, w := range s.Warnings {
		got = append(got, w.Code+" "+w.Queue+" "+w.Kind)
	}
	want := []string{"queue_paused held ", "queue_unserved mail ", "kind_unserved reports pdf"}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Errorf("no warning %q in %q", w, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("warnings %q, want exactly %q (the default queue's test jobs have a live worker)", got, want)
	}
	for _, w := range s.Warnings {
		if !strings.Contains(w.Message, w.Queue) {
			t.Errorf("message %q does not name queue %s", w.Message, w.Queue)
		}
	}
}

// A node is stale after two of its own registration intervals: one that registers every
// minute is not stale 30 s after it was seen, one of the default interval is.
func TestStaleIsTwoOfTheNodesOwnIntervals(t *testing.T) {
	ctx := t.Context()
	clock := clockwork.NewFakeClockAt(epoch)
	st := openStore(t, clock)
	c := NewClient(st, &ClientConfig{Clock: clock})
	for id, every := range map[string]time.Duration{"slow": time.Minute, "default": RegisterIntervalDefault, "unsaid": 0} {
		if err := st.RegisterNode(ctx, store.NodeInfo{ID: id, StartedAt: clock.Now(), RegisterEvery: every}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(30 * time.Second)
	s, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stale := staleByID(s)
	if stale["slow"] || !stale["default"] || !stale["unsaid"] {
		t.Fatalf("stale after 30 s: %v; want default and unsaid, not slow (registers every minute)", stale)
	}
}

// staleByID says, for each node of s, whether it is stale.
func staleByID(s *Status) map[string]bool {
	out := map[string]bool{}
	for _, n := range s.Nodes {
		out[n.ID] = n.Stale
	}
	return out
}
