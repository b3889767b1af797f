package sqlite

import (
	"runtime"
	"testing"

	"github.com/rotahq/rota/store"
)

// holdWriter blocks the writer in a request until release is called, so that the requests
// submitted meanwhile queue up and run as one group.
func holdWriter(t *testing.T, s *Store) (release func()) {
	t.Helper()
	entered, gate := make(chan struct{}), make(chan struct{})
	go s.submit(&request{ctx: t.Context(), fn: func(*wtx) error {
		close(entered)
		<-gate
		return nil
	}})
	<-entered
	return func() { close(gate) }
}

func waitQueued(s *Store, n int) {
	for len(s.w.reqs) < n {
		runtime.Gosched()
	}
}

// DependsOnIndex names a job of the same Insert call. Two calls that the writer merges into one
// statement must still each wait for their own earlier job, not for another call's.
func TestMergedInsertsKeepTheirOwnDependsOnIndex(t *testing.T) {
	s := openTemp(t, WithLogger(discard))
	release := holdWriter(t, s)
	call := func(queue string) []store.InsertParams {
		return []store.InsertParams{
			{Kind: "k", Queue: queue, Args: []byte(`{}`), MaxAttempts: 1},
			{Kind: "k", Queue: queue, Args: []byte(`{}`), MaxAttempts: 1, DependsOnIndex: []int{0}},
		}
	}
	type answer struct {
		res []store.InsertResult
		err error
	}
	a, b := make(chan answer, 1), make(chan answer, 1)
	go func() { r, err := s.Insert(t.Context(), call("a")); a <- answer{r, err} }()
	waitQueued(s, 1)
	go func() { r, err := s.Insert(t.Context(), call("b")); b <- answer{r, err} }()
	waitQueued(s, 2)
	release()
	for _, ch := range []chan answer{a, b} {
		got := <-ch
		if got.err != nil {
			t.Fatal(got.err)
		}
		first, second := got.res[0].Job, got.res[1].Job
		j, err := s.Get(t.Context(), second.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(j.DependsOn) != 1 || j.DependsOn[0] != first.ID {
			t.Errorf("queue %s: job %d depends on %v, want [%d] (its own call's job 0)", second.Queue, j.ID, j.DependsOn, first.ID)
		}
	}
}
