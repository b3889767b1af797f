package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/builtin"
)

// appendScript is the job of the runs that count: a shell script that appends the job's key and the
// node that ran it to the job log, one line per run. One write(2) in O_APPEND mode is atomic, so
// lines from concurrent runs on all nodes never interleave. $0 is the key, $1 the log.
const appendScript = `echo "$0 $` + nodeEnv + `" >> "$1"`

// insertBatch is how many jobs one InsertMany call carries: a batch insert of thousands in one
// call is what producers do.
const insertBatch = 1000

// insertScripts inserts n exec jobs running `sh -c script KEY LOG`, keys k0…k(n-1), through the
// Go client in batches, and returns the job ids by key index.
func (c *cluster) insertScripts(t *testing.T, script string, n int) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ids := make([]int64, 0, n)
	for len(ids) < n {
		batch := make([]rota.InsertManyParams, min(insertBatch, n-len(ids)))
		for i := range batch {
			batch[i].Args = builtin.ExecArgs{Program: "sh", Args: []string{"-c", script, jobKey(len(ids) + i), c.jobLogPath()}}
		}
		res, err := c.client.InsertMany(ctx, batch)
		if err != nil {
			t.Fatalf("insert jobs %d…: %v", len(ids), err)
		}
		for _, r := range res {
			ids = append(ids, r.Job.ID)
		}
	}
	return ids
}

func jobKey(i int) string { return fmt.Sprintf("k%d", i) }

// runs reads the job log: for each key, the nodes that ran it, in the order they did.
func (c *cluster) runs(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open(c.jobLogPath())
	if errors.Is(err, os.ErrNotExist) {
		return map[string][]string{}
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, node, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("job log line %q is not KEY NODE", sc.Text())
		}
		runs[key] = append(runs[key], node)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return runs
}

// counts returns how many of the cluster's jobs are in each state.
func (c *cluster) counts(ctx context.Context) (map[rota.State]int64, error) {
	stats, err := c.client.QueueStats(ctx)
	if err != nil {
		return nil, err
	}
	total := map[rota.State]int64{}
	for _, q := range stats {
		for s, n := range q.Counts {
			total[s] += n
		}
	}
	return total, nil
}

// countEvery is how often waitCompleted counts the jobs: less often than pollEvery, because a
// count scans every job, thousands in the larger tests, and the database should serve the nodes.
// Those waits last seconds to minutes; ending one a little later costs nothing.
const countEvery = 100 * time.Millisecond

// waitCompleted polls until at least want jobs are completed, failing after within. Errors are
// tolerated until then: a test may be restarting the database. It returns the last counts.
func (c *cluster) waitCompleted(t *testing.T, want int64, within time.Duration) map[rota.State]int64 {
	t.Helper()
	var last map[rota.State]int64
	var lastErr error
	completed := eventually(within, countEvery, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		counts, err := c.counts(ctx)
		lastErr = err
		if err != nil {
			return false
		}
		last = counts
		if counts[rota.StateCompleted] >= want {
			return true
		}
		for _, s := range []rota.State{rota.StateDiscarded, rota.StateCancelled, rota.StateExpired} {
			if counts[s] > 0 {
				t.Fatalf("%d jobs ended %s; counts %v; some unfinished jobs:\n%s", counts[s], s, counts, c.unfinished(t))
			}
		}
		return false
	})
	if !completed {
		t.Fatalf("%d jobs completed within %v, want %d; counts %v (last error: %v); some unfinished jobs:\n%s",
			last[rota.StateCompleted], within, want, last, lastErr, c.unfinished(t))
	}
	return last
}

// perJob reports failures of a check run over thousands of jobs, up to a limit, then stops the
// test: one broken rule would otherwise print a line for every job.
type perJob struct {
	t    *testing.T
	left int
}

// checkJobs returns a perJob that stops t after 20 failures.
func checkJobs(t *testing.T) *perJob { return &perJob{t: t, left: 20} }

func (p *perJob) Errorf(format string, args ...any) {
	p.t.Helper()
	p.t.Errorf(format, args...)
	if p.left--; p.left == 0 {
		p.t.Fatalf("too many jobs failed the checks; stopping here")
	}
}

// unfinished describes a few jobs that are not completed, for a failure message: their owner and
// errors say where they are stuck.
func (c *cluster) unfinished(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	states := []rota.State{rota.StateRunning, rota.StateRetryable, rota.StateAvailable, rota.StateDiscarded}
	page, err := c.client.List(ctx, rota.ListParams{States: states, Limit: 5})
	if err != nil {
		return "(cannot list them: " + err.Error() + ")"
	}
	var b strings.Builder
	for _, j := range page {
		errs := j.Errors
		if len(errs) > 3 {
			errs = errs[len(errs)-3:]
		}
		fmt.Fprintf(&b, "job %d: %s, attempt %d, owner %q, fence %d, lease until %v, last errors %+v\n",
			j.ID, j.State, j.Attempt, j.Owner, j.Fence, j.LeaseUntil, errs)
	}
	return b.String()
}

// jobs returns every job of the cluster, by id.
func (c *cluster) jobs(t *testing.T) map[int64]*rota.JobRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	all := map[int64]*rota.JobRow{}
	var after int64
	for {
		page, err := c.client.List(ctx, rota.ListParams{AfterID: after, Limit: 1000})
		if err != nil {
			t.Fatalf("list jobs: %v", err)
		}
		if len(page) == 0 {
			return all
		}
		for _, j := range page {
			all[j.ID] = j
		}
		after = page[len(page)-1].ID
	}
}

// result decodes an exec job's recorded result.
func result(t *testing.T, j *rota.JobRow) builtin.ExecResult {
	t.Helper()
	var r builtin.ExecResult
	if err := json.Unmarshal(j.Result, &r); err != nil {
		t.Fatalf("job %d: result %s: %v", j.ID, j.Result, err)
	}
	return r
}

// leaseLostBy reports whether the job's errors record a lease that the rescuer took from node.
func leaseLostBy(j *rota.JobRow, node string) bool {
	for _, e := range j.Errors {
		if strings.HasPrefix(e.Error, "lease expired") && strings.Contains(e.Error, " "+node+" ") {
			return true
		}
	}
	return false
}

// leaseLost reports whether any of the job's attempts ended with a lost lease.
func leaseLost(j *rota.JobRow) bool {
	for _, e := range j.Errors {
		if strings.HasPrefix(e.Error, "lease expired") {
			return true
		}
	}
	return false
}
