package redis

import (
	"slices"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rotahq/rota/store"
)

// olderVersion makes s's namespace look as a build of version v (3, 4 or 5) left it: the
// version in the meta hash, the id counter under its name then (seq before 5, id:<v> from 5
// on), and the kinds registry under its old name (qk:<q>) for version 4 or not at all for
// version 3.
func olderVersion(t *testing.T, s *Store, v int, queues ...string) {
	t.Helper()
	ctx := t.Context()
	counter, kinds := s.prefix+"seq", queues
	if v >= 5 {
		counter, kinds = s.prefix+"id:"+strconv.Itoa(v), nil
	}
	if err := s.rdb.Rename(ctx, s.prefix+"id:"+strconv.Itoa(schemaVersion), counter).Err(); err != nil {
		t.Fatal(err)
	}
	for _, q := range kinds {
		kq, qk := s.prefix+"kq:"+q, s.prefix+"qk:"+q
		var err error
		if v == 3 {
			err = s.rdb.Del(ctx, kq).Err()
		} else {
			err = s.rdb.Rename(ctx, kq, qk).Err()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.rdb.HSet(ctx, s.keys[0], "version", v).Err(); err != nil {
		t.Fatal(err)
	}
}

// migrated checks that Migrate moved s's namespace to this build's version and that the ids go
// on after last, the highest id the namespace held.
func migrated(t *testing.T, s *Store, last int64) {
	t.Helper()
	ctx := t.Context()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if v := s.rdb.HGet(ctx, s.keys[0], "version").Val(); v != strconv.Itoa(schemaVersion) {
		t.Fatalf("version %s after Migrate, want %d", v, schemaVersion)
	}
	res, err := s.Insert(ctx, []store.InsertParams{job("k")})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Job.ID != last+1 {
		t.Fatalf("first id after Migrate = %d, want %d: the counter must carry on", res[0].Job.ID, last+1)
	}
}

// A version 3 namespace kept its available jobs by age in avt:<queue>; migrating it names each
// queue's kinds in kq:<queue> from those jobs and drops the index, and QueueStats then finds the
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
	// What version 3 had instead: avt:q by run_at, no kinds registry.
	avt := s.prefix + "avt:q"
	for _, r := range res[:2] {
		z := goredis.Z{Score: float64(r.Job.RunAt.UnixMicro()), Member: strconv.FormatInt(r.Job.ID, 10)}
		if err := s.rdb.ZAdd(ctx, avt, z).Err(); err != nil {
			t.Fatal(err)
		}
	}
	olderVersion(t, s, 3, "q")

	migrated(t, s, res[2].Job.ID)
	if n := s.rdb.Exists(ctx, avt).Val(); n != 0 {
		t.Error("avt:q is still there after Migrate")
	}
	kinds := s.rdb.SMembers(ctx, s.prefix+"kq:q").Val()
	slices.Sort(kinds)
	if !slices.Equal(kinds, []string{"a", "b"}) {
		t.Errorf("kq:q = %v after Migrate, want the available jobs' kinds [a b]", kinds)
	}
	stats, err := s.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 2 || stats[1].Queue != "q" || !stats[1].OldestAvailable.Equal(oldest) {
		t.Errorf("QueueStats = %+v, want q with the oldest available from %v", stats, oldest)
	}
}

// A version 4 namespace named each queue's kinds in qk:<queue>, and its prune forgot a queue
// without them. Migrating keeps the registry of every queue in the queues set, under its new
// name, and drops that of a paused queue a prune forgot: a queue whose kinds are known must be
// in the set, which an insert of a known kind relies on. (The registry of a queue forgotten and
// not paused stays as it was, under the old name no build reads.)
func TestMigrateFromVersion4(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	in := func(q string) store.InsertParams {
		p := job("k")
		p.Queue = q
		return p
	}
	res, err := s.Insert(ctx, []store.InsertParams{in("kept"), in("paused"), in("forgot")})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PauseQueue(ctx, "paused"); err != nil {
		t.Fatal(err)
	}
	olderVersion(t, s, 4, "kept", "paused", "forgot")
	// What a version 4 prune left of a queue whose jobs it deleted: the registry, not the queue.
	if err := s.rdb.SRem(ctx, s.prefix+"queues", "paused", "forgot").Err(); err != nil {
		t.Fatal(err)
	}

	migrated(t, s, res[2].Job.ID)
	for q, want := range map[string]int64{"kept": 1, "paused": 0, "forgot": 0} {
		if n := s.rdb.Exists(ctx, s.prefix+"qk:"+q).Val(); n != 0 && q != "forgot" {
			t.Errorf("qk:%s is still there after Migrate", q)
		}
		if n := s.rdb.Exists(ctx, s.prefix+"kq:"+q).Val(); n != want {
			t.Errorf("kq:%s exists %d after Migrate, want %d", q, n, want)
		}
	}
	// The kind is new to the forgotten queue again, so an insert names the queue once more.
	if _, err := s.Insert(ctx, []store.InsertParams{in("forgot")}); err != nil {
		t.Fatal(err)
	}
	if !s.rdb.SIsMember(ctx, s.prefix+"queues", "forgot").Val() {
		t.Error("a queue forgotten before the migration is not in the queues set after an insert")
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
	if err := s.rdb.Del(ctx, s.prefix+"kq:q").Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Claim(ctx, store.ClaimParams{Queue: "q", Kinds: []string{"none"}, Owner: "n", Max: 1, LeaseFor: time.Minute}); err != nil || len(got) != 0 {
		t.Fatalf("Claim of another kind = %v, %v; want nothing, the retry promoted", got, err)
	}
	oldestIn("retried")
}
