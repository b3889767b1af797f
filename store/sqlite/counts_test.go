package sqlite_test

import (
	"errors"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

// The counts QueueStats reads are kept by every write path. After each of many random
// operations they must equal a count of the table.
func TestQueueCountsStayExact(t *testing.T) {
	ctx := t.Context()
	clk := clockwork.NewFakeClockAt(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	s := open(t, filepath.Join(t.TempDir(), "rota.db"), sqlite.WithClock(clk))
	rng := rand.New(rand.NewPCG(1, 2))
	queues := []string{"q1", "q2"}
	var ids []int64
	pick := func() int64 {
		if len(ids) == 0 {
			return 1
		}
		return ids[rng.IntN(len(ids))]
	}
	newJob := func() store.InsertParams {
		p := job()
		p.Queue = queues[rng.IntN(len(queues))]
		p.MaxAttempts = 1 + rng.IntN(2)
		if rng.IntN(4) == 0 {
			p.RunAt = clk.Now().Add(time.Duration(rng.IntN(60)) * time.Second)
		}
		if rng.IntN(5) == 0 {
			p.ExpiresAt = clk.Now().Add(time.Duration(rng.IntN(60)) * time.Second)
		}
		if rng.IntN(4) == 0 {
			p.UniqueKey = []string{"u1", "u2", "u3"}[rng.IntN(3)]
			p.Supersede = rng.IntN(2) == 0
		}
		return p
	}
	outcomes := []store.State{store.StateCompleted, store.StateRetryable, store.StateScheduled,
		store.StateAvailable, store.StateCancelled, store.StateDiscarded}

	for step := range 600 {
		var op string
		var err error
		switch rng.IntN(11) {
		case 0, 1:
			op = "insert"
			ps := make([]store.InsertParams, 1+rng.IntN(5))
			for i := range ps {
				ps[i] = newJob()
			}
			var res []store.InsertResult
			if res, err = s.Insert(ctx, ps); err == nil {
				for _, r := range res {
					ids = append(ids, r.Job.ID)
				}
			}
		case 2:
			op = "insert tx"
			tx, terr := s.DB().BeginTx(ctx, nil)
			if terr != nil {
				t.Fatal(terr)
			}
			if _, err = s.InsertTx(ctx, tx, []store.InsertParams{newJob(), newJob()}); err == nil {
				if rng.IntN(2) == 0 {
					err = tx.Commit()
				}
			}
			tx.Rollback()
		case 3, 4:
			op = "claim and complete"
			var rows []*store.JobRow
			rows, err = s.Claim(ctx, store.ClaimParams{Queue: queues[rng.IntN(2)], Kinds: []string{"k"},
				Max: 1 + rng.IntN(4), Owner: "n", LeaseFor: 10 * time.Second})
			var outs []store.Outcome
			for _, r := range rows {
				if rng.IntN(3) > 0 {
					outs = append(outs, store.Outcome{ID: r.ID, Fence: r.Fence, State: outcomes[rng.IntN(len(outcomes))],
						RunAt: clk.Now().Add(time.Duration(rng.IntN(30)) * time.Second), RefundAttempt: rng.IntN(2) == 0})
				}
			}
			if err == nil && len(outs) > 0 {
				_, err = s.Complete(ctx, outs)
			}
		case 5:
			op = "advance and rescue"
			clk.Advance(time.Duration(rng.IntN(20)) * time.Second)
			_, err = s.Rescue(ctx, 1+rng.IntN(5))
		case 6:
			op = "cancel"
			_, err = s.Cancel(ctx, pick())
		case 7:
			op = "retry"
			_, err = s.Retry(ctx, pick())
		case 8:
			op = "delete"
			err = s.Delete(ctx, pick())
		case 9:
			op = "prune"
			_, err = s.Prune(ctx, store.PruneParams{States: []store.State{store.StateCompleted, store.StateCancelled,
				store.StateDiscarded, store.StateExpired}, Before: clk.Now().Add(-5 * time.Second), Limit: 1 + rng.IntN(5)})
		case 10:
			op = "heartbeat"
			_, err = s.Heartbeat(ctx, "n", 10*time.Second)
		}
		if err != nil && !isExpected(err) {
			t.Fatalf("step %d %s: %v", step, op, err)
		}
		compareCounts(t, s, step, op)
	}
}

func isExpected(err error) bool {
	return errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrJobRunning)
}

func compareCounts(t *testing.T, s *sqlite.Store, step int, op string) {
	t.Helper()
	want := make(map[string]map[store.State]int64)
	rows, err := s.DB().QueryContext(t.Context(), `SELECT queue, state, count(*) FROM jobs GROUP BY queue, state`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var q, state string
		var n int64
		if err := rows.Scan(&q, &state, &n); err != nil {
			t.Fatal(err)
		}
		if want[q] == nil {
			want[q] = make(map[store.State]int64)
		}
		want[q][store.State(state)] = n
	}
	stats, err := s.QueueStats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := make(map[string]map[store.State]int64)
	for _, st := range stats {
		got[st.Queue] = make(map[store.State]int64)
		for state, n := range st.Counts {
			if n != 0 {
				got[st.Queue][state] = n
			}
		}
	}
	for q := range got {
		if len(got[q]) == 0 && want[q] == nil {
			delete(got, q)
		}
	}
	if !maps.EqualFunc(got, want, maps.Equal) {
		t.Fatalf("step %d (%s): QueueStats counts %v, table %v", step, op, got, want)
	}
}
