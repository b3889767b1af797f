package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/rotahq/rota"
)

const (
	// outageJobs is how many jobs the outage run has: enough that the restart falls mid-run.
	outageJobs = 3000
	// outageFor is how long the database stays down between its stop and its start.
	outageFor = 3 * time.Second
)

// A database restart mid-run is an outage the nodes ride out: they log the failures (claims,
// heartbeats, completions, the listener), keep trying, reconnect when the server is back, and
// finish every job; none exits. Job leases are the default 15 s, longer than the outage, so no
// lease should be lost and no job run twice; a duplicate is tolerated only for a job whose
// lease the store records as lost, and reported.
//
// The server is a throwaway one of the test's own, on its own port: the suite's shared server
// serves other packages' tests at the same time.
func TestStoreOutage(t *testing.T) {
	srv := startPostgres(t)
	c := newCluster(t, srv.url)
	// A leader lease short enough to lapse in the outage (the leader steps down 5 s after its
	// last renewal), so the election has to recover as well, within seconds.
	for _, id := range []string{"n1", "n2"} {
		c.start(id, "--rescue-interval", "1s", "--leader-ttl", "6s", "--leader-renew", "2s", "--leader-try", "2s")
	}
	ids := c.insertScripts(t, appendScript, outageJobs)
	c.waitCompleted(t, outageJobs/3, 2*time.Minute)

	down := time.Now()
	srv.stop(t)
	time.Sleep(outageFor) // the outage itself, not a wait for some state
	srv.start(t)
	up := time.Now()
	t.Logf("PostgreSQL down for %v", up.Sub(down).Round(time.Millisecond))
	c.waitCompleted(t, outageJobs, 2*time.Minute)
	t.Logf("all %d jobs completed %v after the server came back", outageJobs, time.Since(up).Round(time.Millisecond))
	// The leader may have stepped down when it could not renew; someone must lead again, or
	// no lost lease would ever be rescued.
	leader, token := c.waitLeader(t, "", 30*time.Second)
	t.Logf("%s leads after the outage (token %d)", leader, token)

	c.checkRodeOutOutage(t, down)
	c.waitListening(t, len(c.nodes), 30*time.Second)

	bad := checkJobs(t)
	jobs := c.jobs(t)
	runs := c.runs(t)
	twice := 0
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
		case n > 1:
			bad.Errorf("job %d (%s) ran %d times, on %v, without losing its lease: %+v", id, key, n, runs[key], j.Errors)
		}
	}
	if twice > 0 {
		t.Logf("%d jobs ran twice because their lease was lost during the outage", twice)
	}
}

// waitListening polls until want notification listeners of the cluster's schema are connected:
// each node's listener has reconnected, so inserts wake the nodes again rather than their poll.
func (c *cluster) waitListening(t *testing.T, want int, within time.Duration) {
	t.Helper()
	var n int
	var err error
	listening := eventually(within, pollEvery, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = c.pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
			"rota listener ("+c.schema+")").Scan(&n)
		return err == nil && n == want
	})
	if !listening {
		t.Fatalf("%d listeners connected after %v, want %d (error: %v)", n, within, want, err)
	}
}

// checkRodeOutOutage checks that every node is still running and said, from down on, that the
// store failed it: an outage that no node noticed proves nothing about riding it out.
func (c *cluster) checkRodeOutOutage(t *testing.T, down time.Time) {
	t.Helper()
	for _, n := range c.nodes {
		if n.exited() {
			t.Errorf("node %s exited: %v", n.id, n.err)
			continue
		}
		failures := 0
		for _, r := range parseLog(n.out.String()) {
			if (r.Level == "WARN" || r.Level == "ERROR") && !r.Time.Before(down) {
				failures++
			}
		}
		if failures == 0 {
			t.Errorf("node %s logged no failure during the outage", n.id)
		}
		t.Logf("node %s logged %d warnings and errors from the outage on", n.id, failures)
	}
}
