package completer

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rotahq/rota/store"
)

// flaky fails its first n Complete calls, as a store whose connection dropped for a moment.
type flaky struct {
	store.Store
	n atomic.Int32
}

func (f *flaky) Complete(ctx context.Context, outcomes []store.Outcome) ([]bool, error) {
	if f.n.Add(-1) >= 0 {
		return nil, fmt.Errorf("%w: dial tcp: connection refused", store.ErrUnavailable)
	}
	return f.Store.Complete(ctx, outcomes)
}

// A store that is down for two writes (~50 ms of backoff) refuses nothing: the outcome it then
// takes must be the one the handler produced, result and error text included.
func TestTransientFailureKeepsResultAndError(t *testing.T) {
	ctx := context.Background()
	st, jobs := running(t, filepath.Join(t.TempDir(), "rota.db"), 2)
	f := &flaky{Store: st}
	clock := clockwork.NewFakeClock()
	c := New(f, clock, logged(t))
	runWithoutWaits(t, c, clock)
	write := func(o store.Outcome) {
		t.Helper()
		f.n.Store(2) // the store is down for the next two writes
		done := make(chan bool, 1)
		c.Add(o, func(ok bool) { done <- ok })
		select {
		case ok := <-done:
			if !ok {
				t.Fatal("outcome not applied")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("outcome not written")
		}
	}
	write(store.Outcome{ID: jobs[0].ID, Fence: jobs[0].Fence, State: store.StateCompleted, Result: []byte(`{"total":42}`)})
	write(store.Outcome{ID: jobs[1].ID, Fence: jobs[1].Fence, State: store.StateRetryable, RunAt: clock.Now(),
		Error: &store.AttemptError{Attempt: 1, At: clock.Now(), Error: "upstream said 503", Trace: "goroutine 1 ..."}})

	if row, _ := st.Get(ctx, jobs[0].ID); string(row.Result) != `{"total":42}` {
		t.Errorf("completed job's result = %q after a brief outage, want {\"total\":42}", row.Result)
	}
	if row, _ := st.Get(ctx, jobs[1].ID); len(row.Errors) != 1 || row.Errors[0].Error != "upstream said 503" || row.Errors[0].Trace == "" {
		t.Errorf("retryable job's errors = %+v after a brief outage, want the handler's error and trace", row.Errors)
	}
}
