package e2e

import (
	"context"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rotahq/rota"
)

// slowScript notes that it started, takes a while before its side effect, then prints the node
// that ran it, so the job's recorded result says whose outcome the store kept.
const slowScript = `echo "$0 $` + nodeEnv + `" >> "$1.started"; sleep 4; echo "$0 $` + nodeEnv + `" >> "$1"; echo "$` + nodeEnv + `"`

// fencingJobs is how many slow jobs the paused node holds.
const fencingJobs = 10

// heldOverScript is slowScript whose later attempts (the claims that took a job over from the
// paused node) wait for the test's "$1.release" before they start: they stay running, their claims
// current, until the test has seen every stale outcome refused, however long the paused node
// takes to wake and report on a loaded machine.
const heldOverScript = `if [ "$ROTA_JOB_ATTEMPT" -gt 1 ]; then until [ -e "$1.release" ]; do sleep 0.05; done; fi; ` + slowScript

// A node paused longer than its job lease (SIGSTOP: a GC or VM stall, a partition) loses its jobs
// to the others. When it wakes up and reports its runs, the new claims are still running, and the
// store refuses the old outcomes by their stale fences alone; the node says so. The jobs end
// completed by the nodes that took them over. The paused node was also the leader: it steps down
// when it wakes, having lost the lease.
//
// Only the node's process is stopped: the programs it started run on in their own process groups
// and make their side effects during the pause. Fencing keeps a stale holder's outcome out of
// the store; guarding a job's own side effects is the handler's part, with its fence.
func TestPausedNodeIsFenced(t *testing.T) {
	c := newCluster(t, sharedPostgres(t))
	// Alone at first, a leads and claims every job.
	a := c.start("a", fastFailover...)
	a.waitLog(t, "rota: became leader", 15*time.Second)
	ids := c.insertScripts(t, heldOverScript, fencingJobs)
	fences := c.waitHeld(t, a.id, ids, 15*time.Second)
	// Holding a claim is not running it yet: on a loaded machine a node takes a moment to start
	// ten programs, and one paused before that would never start the rest.
	c.waitStarted(t, a.id, fencingJobs, 30*time.Second)

	a.signal(t, syscall.SIGSTOP)
	pausedAt := time.Now()
	c.start("b", fastFailover...)
	c.start("c", fastFailover...)
	c.waitClaimedAgain(t, fences, time.Minute)
	c.waitRunsBy(t, a.id, fencingJobs, time.Minute)
	// Before the signal: a may log as soon as it runs again.
	resumedAt := time.Now()
	a.signal(t, syscall.SIGCONT)

	ignored := waitIgnored(t, a, fences, 30*time.Second)
	// Only now may the new claims finish: every refusal came while they were still running.
	if err := os.WriteFile(c.jobLogPath()+".release", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c.waitCompleted(t, fencingJobs, time.Minute)
	t.Logf("a paused %v (job lease 3s) while holding %d jobs; its programs finished meanwhile; when it resumed, its %d outcomes were refused",
		resumedAt.Sub(pausedAt).Round(time.Millisecond), len(fences), len(ignored))

	jobs := c.jobs(t)
	runs := c.runs(t)
	for i, id := range ids {
		j, key := jobs[id], jobKey(i)
		r := ignored[id]
		if r.int("fence") != fences[id] {
			t.Errorf("job %d: a's outcome was refused with fence %d, want its claim's fence %d", id, r.int("fence"), fences[id])
		}
		if !r.Time.Before(j.FinalizedAt) {
			t.Errorf("job %d: a's outcome was refused at %s, after the new claim completed at %s: the fence was not what refused it",
				id, r.Time.Format(time.StampMicro), j.FinalizedAt.Format(time.StampMicro))
		}
		if j.Fence <= fences[id] || j.Attempt != 2 || !leaseLostBy(j, a.id) {
			t.Errorf("job %d: fence %d, attempt %d, errors %+v; want a later claim than a's (fence %d) after a lease lost by a",
				id, j.Fence, j.Attempt, j.Errors, fences[id])
		}
		if by := strings.TrimSpace(result(t, j).Stdout); by != "b" && by != "c" {
			t.Errorf("job %d: the recorded result is from %q, want b or c, the node that took it over", id, by)
		}
		if got := slices.DeleteFunc(slices.Clone(runs[key]), func(n string) bool { return n == a.id }); len(got) != 1 {
			t.Errorf("job %d (%s) ran %d times outside a (runs %v), want once", id, key, len(got), runs[key])
		}
	}

	if a.exited() {
		t.Fatalf("a exited after it resumed: %v", a.err)
	}
	stepped := false
	for _, r := range a.records("rota: lost leadership") {
		stepped = stepped || !r.Time.Before(resumedAt)
	}
	if !stepped {
		t.Errorf("a, the leader when paused, did not log that it lost leadership after it resumed")
	}
}

// waitStarted waits until node has started n of the slow scripts.
func (c *cluster) waitStarted(t *testing.T, node string, n int, within time.Duration) {
	t.Helper()
	got := 0
	started := eventually(within, pollEvery, func() bool {
		data, _ := os.ReadFile(c.jobLogPath() + ".started")
		got = 0
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasSuffix(line, " "+node) {
				got++
			}
		}
		return got >= n
	})
	if !started {
		t.Fatalf("%s started %d of its %d jobs within %v", node, got, n, within)
	}
}

// waitRunsBy polls the job log until node has run n jobs.
func (c *cluster) waitRunsBy(t *testing.T, node string, n int, within time.Duration) {
	t.Helper()
	got := 0
	ran := eventually(within, pollEvery, func() bool {
		got = 0
		for _, nodes := range c.runs(t) {
			got += len(slices.DeleteFunc(slices.Clone(nodes), func(by string) bool { return by != node }))
		}
		return got >= n
	})
	if !ran {
		t.Fatalf("%s ran %d jobs within %v, want %d", node, got, within, n)
	}
}

// waitHeld polls until node runs every job of ids, and returns each job's fence in that claim.
func (c *cluster) waitHeld(t *testing.T, node string, ids []int64, within time.Duration) map[int64]int64 {
	t.Helper()
	var fences map[int64]int64
	held := eventually(within, pollEvery, func() bool {
		fences = map[int64]int64{}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, id := range ids {
			j, err := c.client.Get(ctx, id)
			if err != nil {
				t.Fatalf("get job %d: %v", id, err)
			}
			if j.State == rota.StateRunning && j.Owner == node {
				fences[id] = j.Fence
			}
		}
		return len(fences) == len(ids)
	})
	if !held {
		t.Fatalf("%s runs %d of the %d jobs after %v", node, len(fences), len(ids), within)
	}
	return fences
}

// waitClaimedAgain polls until every job in fences has been claimed after the claim whose fence
// is given.
func (c *cluster) waitClaimedAgain(t *testing.T, fences map[int64]int64, within time.Duration) {
	t.Helper()
	again := 0
	claimed := eventually(within, pollEvery, func() bool {
		again = 0
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for id, fence := range fences {
			j, err := c.client.Get(ctx, id)
			if err != nil {
				t.Fatalf("get job %d: %v", id, err)
			}
			if j.Fence > fence {
				again++
			}
		}
		return again == len(fences)
	})
	if !claimed {
		t.Fatalf("%d of %d jobs claimed again within %v:\n%s", again, len(fences), within, c.unfinished(t))
	}
}

// waitIgnored polls n's log until it has reported a refused outcome for every job in fences, and
// returns each job's report.
func waitIgnored(t *testing.T, n *node, fences map[int64]int64, within time.Duration) map[int64]record {
	t.Helper()
	var ignored map[int64]record
	all := false
	// A node that exited reports nothing more: stop waiting then, too.
	eventually(within, pollEvery, func() bool {
		ignored = map[int64]record{}
		for _, r := range n.records("rota: outcome ignored: the job's lease was lost") {
			ignored[r.int("job")] = r
		}
		all = true
		for id := range fences {
			_, ok := ignored[id]
			all = all && ok
		}
		return all || n.exited()
	})
	if !all {
		t.Fatalf("%s reported %d refused outcomes within %v (exited: %v), want one for each of the %d jobs it lost",
			n.id, len(ignored), within, n.exited(), len(fences))
	}
	return ignored
}
