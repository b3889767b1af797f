package e2e

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota"
)

// exactlyOnceJobs is the size of the exactly-once run: enough that three nodes claim
// concurrently for many seconds, racing on the same rows all the while.
const exactlyOnceJobs = 20_000

// execAnyProgramWarning is what `rota serve` warns at start without --allow-program: expected here.
const execAnyProgramWarning = "rota: exec jobs may run any program as this user; restrict them with --allow-program, or turn exec off with --no-exec"

// When nothing fails, every job runs exactly once: three nodes claiming the same queue never run
// a job twice (SKIP LOCKED claims) and never lose one, all three get work, and no node logs a
// failure.
func TestExactlyOnceThreeNodes(t *testing.T) {
	exactlyOnceThreeNodes(t, newCluster(t, sharedPostgres(t)))
}

// exactlyOnceThreeNodes is TestExactlyOnceThreeNodes on the cluster c, of any store. Besides
// execAnyProgramWarning, nodes may log the warnings that start with one of expected: what the
// store says at start about the server it found, which is no failure of the run.
func exactlyOnceThreeNodes(t *testing.T, c *cluster, expected ...string) {
	for _, id := range []string{"n1", "n2", "n3"} {
		c.start(id)
	}

	began := time.Now()
	ids := c.insertScripts(t, appendScript, exactlyOnceJobs)
	inserted := time.Since(began)
	c.waitCompleted(t, exactlyOnceJobs, 3*time.Minute)
	took := time.Since(began)
	t.Logf("%d exec jobs on 3 nodes: inserted in %v, all completed after %v: %.0f jobs/s",
		exactlyOnceJobs, inserted.Round(time.Millisecond), took.Round(time.Millisecond), exactlyOnceJobs/took.Seconds())

	bad := checkJobs(t)
	runs := c.runs(t)
	perNode := map[string]int{}
	for i := range exactlyOnceJobs {
		key := jobKey(i)
		if len(runs[key]) != 1 {
			bad.Errorf("job %d (%s) ran %d times, on %v; want exactly once", ids[i], key, len(runs[key]), runs[key])
			continue
		}
		perNode[runs[key][0]]++
	}
	if len(runs) != exactlyOnceJobs {
		t.Errorf("the job log names %d keys, want %d", len(runs), exactlyOnceJobs)
	}
	t.Logf("runs per node: %v", perNode)
	for _, n := range c.nodes {
		if perNode[n.id] == 0 {
			t.Errorf("node %s ran no job: %v", n.id, perNode)
		}
	}

	// Nothing failed, so no node may have logged a failure: a warning here is a fault that the
	// job counts above hid (a retried write, a lost heartbeat).
	for _, n := range c.nodes {
		for _, r := range parseLog(n.out.String()) {
			if (r.Level == "WARN" || r.Level == "ERROR") && r.Msg != execAnyProgramWarning && !hasAnyPrefix(r.Msg, expected) {
				t.Errorf("node %s logged %s %q in a run where nothing failed: %v", n.id, r.Level, r.Msg, r.Attrs)
			}
		}
	}

	jobs := c.jobs(t)
	if len(jobs) != exactlyOnceJobs {
		t.Fatalf("the store holds %d jobs, want %d", len(jobs), exactlyOnceJobs)
	}
	for _, id := range slices.Sorted(maps.Keys(jobs)) {
		j := jobs[id]
		if j.State != rota.StateCompleted || j.Attempt != 1 || len(j.Errors) != 0 {
			bad.Errorf("job %d: %s after attempt %d, errors %v; want completed at the first attempt", j.ID, j.State, j.Attempt, j.Errors)
		}
	}
}

// hasAnyPrefix reports whether s starts with one of prefixes.
func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
