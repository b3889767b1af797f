package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/rotahq/rota"

	"github.com/rotahq/rota/internal/rediskeys"
)

// TestStoreOutage on Redis: the test's own redis-server, persisting every write before it answers
// (appendonly yes, appendfsync always), is stopped with SIGTERM a third of the way through
// outageJobs and started again outageFor later on the same port and directory. The nodes log the
// failures, keep trying, reconnect (their subscribers too), and finish every job; none exits, a
// leader is elected again, and no job is lost: the append-only file brought back every insert,
// claim and outcome acknowledged before the stop. Job leases are the default 15 s, longer than
// the outage, so a job may run twice only if the store records its lease as lost.
func TestRedisStoreOutage(t *testing.T) {
	srv := startRedis(t)
	c := newRedisCluster(t, srv.url)
	for _, id := range []string{"n1", "n2"} {
		c.start(id, "--rescue-interval", "1s", "--leader-ttl", "6s", "--leader-renew", "2s", "--leader-try", "2s")
	}
	c.waitSubscribed(t, len(c.nodes), 30*time.Second)
	ids := c.insertScripts(t, appendScript, outageJobs)
	c.waitCompleted(t, outageJobs/3, 2*time.Minute)

	// What the server acknowledged before it stopped must come back from the append-only file.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	before, err := c.counts(ctx)
	cancel()
	if err != nil {
		t.Fatalf("count jobs before the stop: %v", err)
	}
	down := time.Now()
	srv.stop(t)
	time.Sleep(outageFor) // the outage itself, not a wait for some state
	srv.start(t)
	up := time.Now()
	t.Logf("Redis down for %v", up.Sub(down).Round(time.Millisecond))
	// Recovery: the first outcome recorded after the restart, beyond what the file brought back.
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	back, err := c.counts(ctx)
	cancel()
	if err != nil {
		t.Fatalf("count jobs after the restart: %v", err)
	}
	if back[rota.StateCompleted] < before[rota.StateCompleted] {
		t.Errorf("%d jobs completed before the stop, only %d after the restart: the append-only file lost outcomes",
			before[rota.StateCompleted], back[rota.StateCompleted])
	}
	c.waitCompleted(t, back[rota.StateCompleted]+1, time.Minute)
	t.Logf("%d jobs completed when the server came back; the next completed %v after it",
		back[rota.StateCompleted], time.Since(up).Round(time.Millisecond))
	counts := c.waitCompleted(t, outageJobs, 2*time.Minute)
	t.Logf("all %d jobs completed %v after the server came back: %v", outageJobs, time.Since(up).Round(time.Millisecond), counts)
	leader, token := c.waitLeader(t, "", 30*time.Second)
	t.Logf("%s leads after the outage (token %d)", leader, token)

	c.checkRodeOutOutage(t, down)
	c.waitSubscribed(t, len(c.nodes), 30*time.Second)

	bad := checkJobs(t)
	jobs := c.jobs(t)
	if len(jobs) != outageJobs {
		t.Errorf("the store holds %d jobs after the restart, want %d", len(jobs), outageJobs)
	}
	runs := c.runs(t)
	twice, lostOnce := 0, 0
	for i, id := range ids {
		j, key := jobs[id], jobKey(i)
		if j == nil || j.State != rota.StateCompleted {
			bad.Errorf("job %d (%s) is %v, want completed", id, key, j)
			continue
		}
		switch n := len(runs[key]); {
		case n == 0:
			bad.Errorf("job %d (%s) completed but never ran", id, key)
		case n > 1 && leaseLost(j):
			twice++
		case leaseLost(j):
			// Claimed, yet its node never ran it: the claim's reply was lost in the restart, and
			// the job waited out its lease before the rescuer gave it to a node again.
			lostOnce++
		case n > 1:
			bad.Errorf("job %d (%s) ran %d times, on %v, without losing its lease: %+v", id, key, n, runs[key], j.Errors)
		}
	}
	t.Logf("%d jobs ran twice because their lease was lost during the outage; %d lost their lease without having run "+
		"(a claim whose reply the restart cut off) and ran once after the rescue", twice, lostOnce)
}

// waitSubscribed polls until want connections subscribe to the namespace's notification channel:
// each node's subscriber has (re)connected, so inserts wake the nodes again rather than their poll.
func (c *cluster) waitSubscribed(t *testing.T, want int, within time.Duration) {
	t.Helper()
	channel := rediskeys.Prefix(c.schema) + "ev"
	var n int64
	var err error
	subscribed := eventually(within, pollEvery, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var m map[string]int64
		m, err = c.rdb.PubSubNumSub(ctx, channel).Result()
		n = m[channel]
		return err == nil && n == int64(want)
	})
	if !subscribed {
		t.Fatalf("%d subscribers on %s after %v, want %d (error: %v)", n, channel, within, want, err)
	}
}
