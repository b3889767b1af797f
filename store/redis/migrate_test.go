package redis

import (
	"slices"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rotahq/rota/store"
)

// A version 3 namespace kept its available jobs by age in avt:<queue>; migrating it names each
// queue's kinds in qk:<queue> from those jobs and drops the index, and QueueStats then finds the
// oldest available job through them.
func TestMigrateFromVersion3(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	now := time.Now().Truncate(time.Microsecond)
	in := func(kind string, runAt time.Time) store.InsertParams {
		p := job(kind)
		p.Queue, p.RunAt = "q", runAt
		return p
	}
	oldest := now.Add(-2 * time.Hour)
	res, err := s.Insert(ctx, []store.InsertParams{in("a", now.Add(-time.Hour)), in("b", oldest), in("c", now.Add(time.Hour))})
	if err != nil {
		t.Fatal(err)
	}
	// What version 3 had instead: avt:q by run_at, no qk:q.
	avt, qk := s.prefix+"avt:q", s.prefix+"qk:q"
	for _, r := range res[:2] {
		z := goredis.Z{Score: float64(r.Job.RunAt.UnixMicro()), Member: strconv.FormatInt(r.Job.ID, 10)}
		if err := s.rdb.ZAdd(ctx, avt, z).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.rdb.Del(ctx, qk).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.HSet(ctx, s.keys[0], "version", 3).Err(); err != nil {
		t.Fatal(err)
	}

	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if v := s.rdb.HGet(ctx, s.keys[0], "version").Val(); v != strconv.Itoa(schemaVersion) {
		t.Fatalf("version %s after Migrate, want %d", v, schemaVersion)
	}
	if n := s.rdb.Exists(ctx, avt).Val(); n != 0 {
		t.Error("avt:q is still there after Migrate")
	}
	kinds := s.rdb.SMembers(ctx, qk).Val()
	slices.Sort(kinds)
	if !slices.Equal(kinds, []string{"a", "b"}) {
		t.Errorf("qk:q = %v after Migrate, want the available jobs' kinds [a b]", kinds)
	}
	stats, err := s.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 1 || !stats[0].OldestAvailable.Equal(oldest) {
		t.Errorf("QueueStats = %+v, want q with the oldest available from %v", stats, oldest)
	}
}

// A job made available by a release, or by a claim's promotion of a due retry, is found by
// QueueStats as one inserted available is: each path names its kind for its queue.
func TestOldestAvailableAfterReleaseAndRetry(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	dep := job("root")
	dep.Queue = "other"
	res, err := s.Insert(ctx, []store.InsertParams{dep})
	if err != nil {
		t.Fatal(err)
	}
	step := job("step")
	step.Queue = "q"
	step.DependsOn = []int64{res[0].Job.ID}
	if _, err := s.Insert(ctx, []store.InsertParams{step}); err != nil {
		t.Fatal(err)
	}
	end := func(queue, kind string, o store.Outcome) {
		t.Helper()
		claimed, err := s.Claim(ctx, store.ClaimParams{Queue: queue, Kinds: []string{kind}, Owner: "n", Max: 1, LeaseFor: time.Minute})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("Claim = %v, %v", claimed, err)
		}
		o.ID, o.Fence = claimed[0].ID, claimed[0].Fence
		if _, err := s.Complete(ctx, []store.Outcome{o}); err != nil {
			t.Fatal(err)
		}
	}
	oldestIn := func(what string) {
		t.Helper()
		stats, err := s.QueueStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range stats {
			if q.Queue == "q" && (q.Counts[store.StateAvailable] != 1 || q.OldestAvailable.IsZero()) {
				t.Errorf("q: %+v, want the %s step available, with its time", q, what)
			}
		}
	}
	end("other", "root", store.Outcome{State: store.StateCompleted})
	oldestIn("released")

	// The step fails, due again at once; the registry is emptied to see the promotion name it.
	end("q", "step", store.Outcome{State: store.StateRetryable, RunAt: time.Now().Add(-time.Minute)})
	if err := s.rdb.Del(ctx, s.prefix+"qk:q").Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Claim(ctx, store.ClaimParams{Queue: "q", Kinds: []string{"none"}, Owner: "n", Max: 1, LeaseFor: time.Minute}); err != nil || len(got) != 0 {
		t.Fatalf("Claim of another kind = %v, %v; want nothing, the retry promoted", got, err)
	}
	oldestIn("retried")
}
