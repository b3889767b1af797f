package e2e

import (
	"testing"
	"time"
)

// rescueFlags give jobs a 3 s lease looked at every second, and the leader a lease ten times as
// long: a rescue that waited for a new leader would take 30 s, one by any node at most 4 s.
var rescueFlags = []string{
	"--job-lease", "3s", "--rescue-interval", "1s",
	"--leader-ttl", "30s", "--leader-renew", "10s", "--leader-try", "10s",
}

// rescueSlack covers what is not the lease nor the interval: the server noticing the killed
// node's connections, a notification, a claim, on a loaded machine.
const rescueSlack = 3 * time.Second

// A killed leader's jobs run again within one job lease and one rescue interval, not after its
// leader lease: every node rescues, leader or not, and the store makes each rescue atomic.
func TestKilledLeadersJobsRunAgainWithinJobLease(t *testing.T) {
	c := newCluster(t, sharedPostgres(t))
	a := c.start("a", rescueFlags...)
	a.waitLog(t, "rota: became leader", 15*time.Second)
	ids := c.insertScripts(t, slowScript, fencingJobs)
	fences := c.waitHeld(t, a.id, ids, 15*time.Second)
	c.waitStarted(t, a.id, fencingJobs, 30*time.Second)
	b := c.start("b", rescueFlags...)

	a.kill(t)
	c.waitClaimedAgain(t, fences, time.Minute)
	// When the jobs were claimed again, by the store (each attempt's start): not when the test
	// saw it, which on a loaded machine can be seconds later.
	var took time.Duration
	for _, j := range c.jobs(t) {
		took = max(took, j.AttemptedAt.Sub(a.killedAt))
	}
	if limit := 3*time.Second + time.Second + rescueSlack; took > limit {
		t.Errorf("the killed leader's jobs were claimed again %v after the kill, want within %v (job lease + rescue interval + slack)", took.Round(time.Millisecond), limit)
	}
	if len(b.records("rota: became leader")) > 0 {
		t.Errorf("b became leader before the rescue was measured: the test proved nothing")
	}
	c.waitCompleted(t, fencingJobs, time.Minute)
	t.Logf("leader a SIGKILLed holding %d jobs; b claimed them all again %v later (leader lease 30s)", len(fences), took.Round(time.Millisecond))
}
