package rota

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/cron"
	"github.com/rotahq/rota/internal/leader"
	"github.com/rotahq/rota/store"
)

// A leader that dies hands the cron planner to another node once its lease has expired. Every
// occurrence in between must still be planned, whatever lease the fleet was configured with
// (a leader change never skips a run; "missed" is for when every node was down).
func TestCronSurvivesLeaderHandoverWithLongerLease(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(epoch)
	st := openStore(t, clock)
	leases := LeaderConfig{TTL: 90 * time.Second, RenewEvery: 10 * time.Second, TryEvery: 10 * time.Second}
	newNode := func(id string) *Node {
		workers := NewWorkers()
		AddWorker(workers, WorkFunc[testArgs](func(context.Context, *Job[testArgs]) error { return nil }), nil)
		n, err := NewNode(Config{Store: st, Workers: workers, Clock: clock, ID: id, Logger: testLogger(t), Leader: leases})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	cronPass := func(n *Node) {
		for _, s := range n.leaderServices() {
			if s.Name == ServiceCron {
				if _, err := s.Pass(ctx); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
		t.Fatal("no cron service")
	}
	a, b := newNode("node-a"), newNode("node-b")
	const expr = "*/5 * * * * *"
	if _, err := a.Client().UpsertSchedule(ctx, Schedule{Name: "s", Expr: expr, Args: testArgs{}, Missed: MissedSkip}); err != nil {
		t.Fatal(err)
	}

	// node-a leads: it takes the lease and plans; then it is SIGKILLed.
	if _, held, err := st.AcquireLease(ctx, leader.NameDefault, "node-a", leases.TTL); err != nil || !held {
		t.Fatalf("node-a lease: %v %v", held, err)
	}
	cronPass(a)
	died := clock.Now()

	// node-b tries every TryEvery and gets the lease only once node-a's has expired.
	for {
		clock.Advance(leases.TryEvery)
		_, held, err := st.AcquireLease(ctx, leader.NameDefault, "node-b", leases.TTL)
		if err != nil {
			t.Fatal(err)
		}
		if held {
			break
		}
	}
	t.Logf("node-b leads %v after node-a died", clock.Since(died))
	cronPass(b) // the elector starts the cron loop, which passes at once

	sched, _ := cron.Parse(expr, "UTC")
	planned := map[int64]bool{}
	jobs, err := st.List(ctx, store.ListParams{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.Schedule == "s" && j.State != store.StateCancelled {
			planned[j.RunAt.Unix()] = true
		}
	}
	var missing []time.Time
	for at := sched.Next(died); !at.After(clock.Now()); at = sched.Next(at) {
		if !planned[at.Unix()] {
			missing = append(missing, at)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("occurrences between the leader's death and its successor's first pass never planned: %v", missing)
	}
}

// A schedule stored just before an occurrence is first planned at the leader's next cron pass,
// up to one CronInterval later: that occurrence was late, not missed, and runs under either
// policy, whatever CronInterval is.
func TestCronLateFirstPassWithLongerInterval(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(epoch.Add(-500 * time.Millisecond)) // 11:59:59.5
	st := openStore(t, clock)
	workers := NewWorkers()
	AddWorker(workers, WorkFunc[testArgs](func(context.Context, *Job[testArgs]) error { return nil }), nil)
	n, err := NewNode(Config{Store: st, Workers: workers, Clock: clock, ID: "a", Logger: testLogger(t),
		CronInterval: 30 * time.Second, Leader: LeaderConfig{Standalone: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Client().UpsertSchedule(ctx, Schedule{Name: "noon", Expr: "0 12 * * *", Args: testArgs{}, Missed: MissedSkip}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(29 * time.Second) // the cron loop's next pass, within one CronInterval
	for _, s := range n.leaderServices() {
		if s.Name == ServiceCron {
			if _, err := s.Pass(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	jobs, err := st.List(ctx, store.ListParams{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 {
		t.Fatalf("%d jobs for today's noon occurrence, which passed 28.5s before the first pass; want 1", len(jobs))
	}
}
