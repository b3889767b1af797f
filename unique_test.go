package rota

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

func uniqueClient(t *testing.T) (*Client, *clockwork.FakeClock) {
	clock := clockwork.NewFakeClockAt(epoch)
	return NewClient(openStore(t, clock), &ClientConfig{Clock: clock}), clock
}

func raw(kind, js string) RawArgs { return RawArgs{KindName: kind, JSON: json.RawMessage(js)} }

func TestUniqueByArgsComparesValuesNotBytes(t *testing.T) {
	c, _ := uniqueClient(t)
	ctx := context.Background()
	opts := &InsertOpts{Unique: &UniqueOpts{ByArgs: true}}
	first, err := c.Insert(ctx, raw("report", `{"account":7,"month":"2026-02"}`), opts)
	if err != nil || first.Duplicate {
		t.Fatalf("first: %+v %v", first, err)
	}
	again, err := c.Insert(ctx, raw("report", `{ "month": "2026-02", "account": 7 }`), opts)
	if err != nil || !again.Duplicate || again.Job.ID != first.Job.ID {
		t.Fatalf("same args reordered: duplicate=%v id=%d, want duplicate of %d (%v)", again.Duplicate, again.Job.ID, first.Job.ID, err)
	}
	other, err := c.Insert(ctx, raw("report", `{"account":8,"month":"2026-02"}`), opts)
	if err != nil || other.Duplicate {
		t.Fatalf("different args: duplicate=%v (%v)", other.Duplicate, err)
	}
	otherKind, err := c.Insert(ctx, raw("invoice", `{"account":7,"month":"2026-02"}`), opts)
	if err != nil || otherKind.Duplicate {
		t.Fatalf("different kind: duplicate=%v (%v)", otherKind.Duplicate, err)
	}
}

func TestUniqueByChosenFieldsAndQueue(t *testing.T) {
	c, _ := uniqueClient(t)
	ctx := context.Background()
	opts := func(q string) *InsertOpts {
		return &InsertOpts{Queue: q, Unique: &UniqueOpts{ByArgsFields: []string{"account"}, ByQueue: true}}
	}
	first, _ := c.Insert(ctx, raw("sync", `{"account":1,"requested_by":"alice"}`), opts("a"))
	dup, _ := c.Insert(ctx, raw("sync", `{"account":1,"requested_by":"bob"}`), opts("a"))
	if !dup.Duplicate || dup.Job.ID != first.Job.ID {
		t.Fatal("a field outside ByArgsFields made the job distinct")
	}
	if other, _ := c.Insert(ctx, raw("sync", `{"account":1}`), opts("b")); other.Duplicate {
		t.Fatal("another queue was a duplicate with ByQueue set")
	}
}

// A field the args do not have is a mistake (a typo, an omitempty field): every job of the kind
// would be a duplicate of the first. It is refused at insert, naming the fields there are.
func TestUniqueByAFieldTheArgsLackIsRefused(t *testing.T) {
	c, _ := uniqueClient(t)
	opts := &InsertOpts{Unique: &UniqueOpts{ByArgsFields: []string{"acount"}}}
	_, err := c.Insert(t.Context(), raw("sync", `{"account":1,"requested_by":"alice"}`), opts)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `unique by args field "acount": the args have no such field (they have account, requested_by)`) {
		t.Fatalf("insert: %v", err)
	}
	if n, _ := c.List(t.Context(), ListParams{}); len(n) != 0 {
		t.Fatalf("%d jobs inserted", len(n))
	}
}

func TestUniqueByPeriodLetsTheNextPeriodIn(t *testing.T) {
	c, clock := uniqueClient(t)
	ctx := context.Background()
	opts := &InsertOpts{Unique: &UniqueOpts{ByPeriod: time.Hour}}
	first, _ := c.Insert(ctx, raw("digest", `{}`), opts)
	clock.Advance(59 * time.Minute) // epoch is on the hour: still the same hour
	if dup, _ := c.Insert(ctx, raw("digest", `{}`), opts); !dup.Duplicate || dup.Job.ID != first.Job.ID {
		t.Fatal("second insert in the same hour was not a duplicate")
	}
	clock.Advance(time.Minute)
	if next, _ := c.Insert(ctx, raw("digest", `{}`), opts); next.Duplicate {
		t.Fatal("the next hour's insert was a duplicate")
	}
}

func TestUniqueByStateDecidesWhatCounts(t *testing.T) {
	c, _ := uniqueClient(t)
	ctx := context.Background()
	first, _ := c.Insert(ctx, raw("welcome", `{"user":1}`), &InsertOpts{Unique: &UniqueOpts{ByArgs: true}})
	if _, err := c.Cancel(ctx, first.Job.ID); err != nil {
		t.Fatal(err)
	}
	// By default a cancelled job does not block a new one…
	second, _ := c.Insert(ctx, raw("welcome", `{"user":1}`), &InsertOpts{Unique: &UniqueOpts{ByArgs: true}})
	if second.Duplicate {
		t.Fatal("a cancelled job blocked a new one under the default states")
	}
	if _, err := c.Cancel(ctx, second.Job.ID); err != nil {
		t.Fatal(err)
	}
	// …but it does when the caller says cancelled counts ("welcome a user once, ever").
	ever := &InsertOpts{Unique: &UniqueOpts{ByArgs: true, ByState: []State{StateAvailable, StateCancelled, StateCompleted}}}
	third, _ := c.Insert(ctx, raw("welcome", `{"user":1}`), ever)
	if !third.Duplicate {
		t.Fatal("a cancelled job did not count although ByState names cancelled")
	}
}

func TestConcurrentUniqueInsertsCreateOneJob(t *testing.T) {
	c, _ := uniqueClient(t)
	var wg sync.WaitGroup
	ids := make(chan int64, 50)
	for range 50 {
		wg.Go(func() {
			res, err := c.Insert(context.Background(), raw("rebuild-index", `{"shard":3}`), &InsertOpts{Unique: &UniqueOpts{ByArgs: true}})
			if err != nil {
				t.Error(err)
				return
			}
			ids <- res.Job.ID
		})
	}
	wg.Wait()
	close(ids)
	seen := map[int64]bool{}
	for id := range ids {
		seen[id] = true
	}
	if len(seen) != 1 {
		t.Fatalf("50 concurrent unique inserts made %d jobs", len(seen))
	}
}

func TestSupersedeReplacesAWaitingJob(t *testing.T) {
	c, _ := uniqueClient(t)
	ctx := context.Background()
	opts := &InsertOpts{Unique: &UniqueOpts{ByArgsFields: []string{"mailbox"}}, Supersede: true}
	old, _ := c.Insert(ctx, raw("reencrypt", `{"mailbox":"m1","key":"k1"}`), opts)
	newer, err := c.Insert(ctx, raw("reencrypt", `{"mailbox":"m1","key":"k2"}`), opts)
	if err != nil || newer.Duplicate || newer.Job.ID == old.Job.ID {
		t.Fatalf("supersede: %+v %v", newer, err)
	}
	if row, _ := c.Get(ctx, old.Job.ID); row.State != StateCancelled {
		t.Fatalf("superseded job is %s, want cancelled", row.State)
	}
}
