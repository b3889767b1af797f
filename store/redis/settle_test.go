package redis

import (
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/storetest"
)

// claimedRoot inserts a root job with n dependents and claims the root.
func claimedRoot(t *testing.T, s *Store, n int) (*store.JobRow, []*store.JobRow) {
	t.Helper()
	root := insertAll(t, s, job("root"))[0]
	deps := make([]store.InsertParams, n)
	for i := range deps {
		deps[i] = job("dep")
		deps[i].DependsOn = []int64{root.ID}
	}
	dependents := insertAll(t, s, deps...)
	claimed, err := s.Claim(t.Context(), store.ClaimParams{Queue: "default", Kinds: []string{"root"}, Max: 1, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	return claimed[0], dependents
}

func countStates(t *testing.T, s *Store, rows []*store.JobRow) map[store.State]int {
	t.Helper()
	n := make(map[store.State]int)
	for _, r := range rows {
		n[get(t, s, r.ID).State]++
	}
	return n
}

// The shared settling scenarios, on a store that settles two edges per transaction.
func TestSettling(t *testing.T) {
	storetest.Settling(t, storetest.Parking{
		Open: func(t *testing.T, clk clockwork.Clock) store.Store {
			return open(t, WithClock(clk), WithSettleBatch(2))
		},
		CompleteLeavingParked: func(t *testing.T, st store.Store, o store.Outcome) {
			s := st.(*Store)
			if _, err := s.write(t.Context(), scriptComplete, s.argv(scriptComplete, s.completeArgs([]store.Outcome{o}))); err != nil {
				t.Fatal(err)
			}
		},
		Left: func(t *testing.T, st store.Store) (parked, edges int) {
			s := st.(*Store)
			n, err := s.rdb.HLen(t.Context(), s.prefix+"settling").Result()
			if err != nil {
				t.Fatal(err)
			}
			return int(n), len(edgesLeft(t, s))
		},
	})
}

// edgesLeft lists what s keeps of dependency edges: its dep sets and release entries
// (depKeys) and the inline edges of its job hashes.
func edgesLeft(t *testing.T, s *Store) []string {
	t.Helper()
	ctx := t.Context()
	edges := depKeys(t, s)
	jobs, err := s.rdb.Keys(ctx, s.prefix+"j:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range jobs {
		if dp, err := s.rdb.HGet(ctx, k, "dp").Result(); err == nil && strings.HasPrefix(dp, "=") {
			edges = append(edges, k+" -> "+dp[1:])
		}
	}
	return edges
}
