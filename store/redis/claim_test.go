package redis

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

// A claim of up to 16 jobs gets its rows from the script; a larger one reads them after it, in a
// pipeline. Both give what Get gives for the claimed jobs, in claim order.
func TestClaimRowsBothWays(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	for _, n := range []int{1, 16, 17, 60} {
		params := make([]store.InsertParams, n)
		for i := range params {
			params[i] = store.InsertParams{Kind: "k", Queue: "default", Args: fmt.Appendf(nil, `{"i":%d}`, i),
				MaxAttempts: 3, Priority: i % 3, Tags: []string{"t"}, Metadata: []byte(`{"m":1}`)}
		}
		if _, err := s.Insert(ctx, params); err != nil {
			t.Fatal(err)
		}
		rows, err := s.Claim(ctx, store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: n, Owner: "n1", LeaseFor: time.Minute})
		if err != nil || len(rows) != n {
			t.Fatalf("claim of %d: %d rows, %v", n, len(rows), err)
		}
		for i, r := range rows {
			if i > 0 && r.Priority > rows[i-1].Priority {
				t.Errorf("claim of %d: row %d (priority %d) after priority %d", n, i, r.Priority, rows[i-1].Priority)
			}
			got, err := s.Get(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r, got) {
				t.Errorf("claim of %d: claimed row\n%+v\nGet\n%+v", n, r, got)
			}
			if r.State != store.StateRunning || r.Attempt != 1 || r.Owner != "n1" || len(r.Tags) != 1 {
				t.Errorf("claim of %d: row %+v", n, r)
			}
		}
	}
}
