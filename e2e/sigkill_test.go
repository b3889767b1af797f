package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/rotahq/rota"
)

// fastFailover makes nodes give up a dead peer in seconds instead of the production defaults'
// tens of seconds: job leases of 3 s (heartbeat every 1 s) looked at every second, and a leader
// lease of 3 s renewed every second that the others try for every second.
var fastFailover = []string{
	"--job-lease", "3s", "--rescue-interval", "1s",
	"--leader-ttl", "3s", "--leader-renew", "1s", "--leader-try", "1s",
}

// sigkillJobs is the size of the SIGKILL run, the same as the exactly-once run's.
const sigkillJobs = exactlyOnceJobs

// victimLease is the job lease of the node the SIGKILL run kills. Its jobs stay its own until their
// leases expire, at least two thirds of this after the kill (a heartbeat every third): the test's
// window to read what the dead node held, before the others' rescuers (1 s apart) take it. At 3 s
// a machine loaded by other tests missed that window; the live nodes keep fastFailover's 3 s.
const victimLease = 12 * time.Second

// withJobLease returns flags with its --job-lease set to lease.
func withJobLease(flags []string, lease time.Duration) []string {
	out := append([]string(nil), flags...)
	for i := range out {
		if out[i] == "--job-lease" {
			out[i+1] = lease.String()
		}
	}
	return out
}

// A node SIGKILLed mid-run loses nothing: every job ends completed and runs at least once. Only
// the jobs the dead node held when it died may run twice (its program may have written before the
// node could record the outcome), and the store shows exactly those as rescued from it: a lost
// lease on their first attempt, completed at the second. The victim is the leader: its jobs and
// its leader services fail over at once.
func TestSIGKILLMidRun(t *testing.T) {
	sigkillMidRun(t, newCluster(t, sharedPostgres(t)))
}

// sigkillMidRun is TestSIGKILLMidRun on the cluster c, of any store.
func sigkillMidRun(t *testing.T, c *cluster) {
	// The victim starts alone, so it is the leader once the others join.
	victim := c.start("n1", withJobLease(fastFailover, victimLease)...)
	if leader, _ := c.waitLeader(t, "", 15*time.Second); leader != victim.id {
		t.Fatalf("leader is %s, want %s, the only node", leader, victim.id)
	}
	for _, id := range []string{"n2", "n3"} {
		c.start(id, fastFailover...)
	}

	began := time.Now()
	ids := c.insertScripts(t, appendScript, sigkillJobs)
	c.waitCompleted(t, sigkillJobs/3, 2*time.Minute)
	if c.sessions(t, victim.id) == 0 {
		t.Fatalf("no session of %s in the server (pg_stat_activity, CLIENT LIST): its connections are not named", victim.id)
	}
	victim.kill(t)
	// Once the server has ended the dead node's sessions, nothing can change its jobs until their
	// leases expire, at least 8 s from now.
	c.waitDisconnected(t, victim.id, 10*time.Second)
	held := c.runningOn(t, victim.id)
	if read := time.Since(victim.killedAt); read > victimLease*2/3 {
		t.Fatalf("read the jobs %s held %v after killing it, when their leases may have expired: the check would be wrong", victim.id, read)
	}
	c.waitCompleted(t, sigkillJobs, 3*time.Minute)
	took := time.Since(began)

	bad := checkJobs(t)
	jobs := c.jobs(t)
	runs := c.runs(t)
	rescued, twice := 0, 0
	for i, id := range ids {
		j, key := jobs[id], jobKey(i)
		if j == nil || j.State != rota.StateCompleted {
			bad.Errorf("job %d (%s) is %v, want completed", id, key, j)
			continue
		}
		lost := leaseLostBy(j, victim.id)
		switch {
		case lost:
			rescued++
			if !held[id] {
				bad.Errorf("job %d was rescued from %s but was not running there when it died: %+v", id, victim.id, j.Errors)
			}
			if j.Attempt != 2 {
				bad.Errorf("rescued job %d completed at attempt %d, want 2: %+v", id, j.Attempt, j.Errors)
			}
		case leaseLost(j):
			bad.Errorf("job %d lost its lease on a live node: %+v", id, j.Errors)
		case j.Attempt != 1:
			bad.Errorf("job %d completed at attempt %d without a lost lease: %+v", id, j.Attempt, j.Errors)
		}
		switch n := len(runs[key]); {
		case n == 0:
			bad.Errorf("job %d (%s) completed but never ran", id, key)
		case n == 2 && lost && runs[key][0] == victim.id:
			twice++
		case n > 1:
			bad.Errorf("job %d (%s) ran %d times, on %v; only jobs rescued from %s may run twice", id, key, n, runs[key], victim.id)
		}
	}
	if rescued != len(held) {
		t.Errorf("%d jobs were rescued from %s, want the %d it held when it died", rescued, victim.id, len(held))
	}
	if len(held) == 0 {
		t.Errorf("killed node %s held no job when it died: the test proved nothing", victim.id)
	}
	t.Logf("%d jobs, leader %s SIGKILLed after a third: all completed after %v (%.0f jobs/s); it held %d jobs, %d were rescued, %d of them ran twice",
		sigkillJobs, victim.id, took.Round(time.Millisecond), sigkillJobs/took.Seconds(), len(held), rescued, twice)
}

// runningOn returns the ids of the jobs running on node, by the store.
func (c *cluster) runningOn(t *testing.T, node string) map[int64]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	held := map[int64]bool{}
	var after int64
	for {
		page, err := c.client.List(ctx, rota.ListParams{States: []rota.State{rota.StateRunning}, AfterID: after, Limit: 1000})
		if err != nil {
			t.Fatalf("list running jobs: %v", err)
		}
		if len(page) == 0 {
			return held
		}
		for _, j := range page {
			if j.Owner == node {
				held[j.ID] = true
			}
		}
		after = page[len(page)-1].ID
	}
}
