package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/builtin"
	"github.com/rotahq/rota/store/redis"
)

// flushJobs is how many jobs the flush run has: enough that the flush falls mid-run.
const flushJobs = 3000

// A namespace flushed under running nodes (FLUSHDB on the test's own server) is not quietly
// rebuilt: every script checks the namespace's meta key first, so each node's next claim is
// refused with redis.ErrNotMigrated, and the node logs that reason and keeps running without
// taking another job. Only the jobs the nodes held when the flush came may still run (at most
// what they can hold at once), and no write of a node puts a key of the namespace back.
//
// Then the operator migrates the namespace again: it gets a new identity, which every node's
// leader election reports as a reset store, and jobs inserted into it run exactly once.
func TestRedisNamespaceFlushed(t *testing.T) {
	srv := startRedis(t)
	c := newRedisCluster(t, srv.url)
	ids := []string{"n1", "n2", "n3"}
	for _, id := range ids {
		c.start(id, "--rescue-interval", "1s", "--leader-ttl", "3s", "--leader-renew", "1s", "--leader-try", "1s")
	}
	c.insertScripts(t, appendScript, flushJobs)
	c.waitCompleted(t, flushJobs/3, 2*time.Minute)

	flushed := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.rdb.FlushDB(ctx).Err(); err != nil {
		t.Fatalf("FLUSHDB on the test's own server: %v", err)
	}
	// Every run the log gains from now on is of a job claimed before the flush, so running at it.
	ranBefore := len(c.runs(t))

	// Every node notices: a claim (or other call) refused with the store's reason.
	for _, id := range ids {
		r := c.node(id).waitRecordAfter(t, flushed, 15*time.Second, func(r record) bool {
			return isFailure(r) && strings.Contains(r.str("error"), redis.ErrNotMigrated.Error())
		})
		t.Logf("node %s noticed %v after the flush: %s: %s", id, r.Time.Sub(flushed).Round(time.Millisecond), r.Msg, r.str("error"))
	}
	if _, err := c.counts(ctx); !errors.Is(err, redis.ErrNotMigrated) {
		t.Errorf("the test's client counts jobs on the flushed namespace with error %v, want redis.ErrNotMigrated", err)
	}

	// Stop claiming: the held jobs run out, and every node is refused its claims (and says so
	// once, not at every poll).
	var settled int
	still := 0
	if !eventually(30*time.Second, 200*time.Millisecond, func() bool {
		n := len(c.runs(t))
		if n == settled {
			still++
		} else {
			settled, still = n, 0
		}
		return still == 5
	}) {
		t.Fatalf("the job log still grows 30s after the flush: %d runs", settled)
	}
	for _, id := range ids {
		c.node(id).waitRecordAfter(t, flushed, 15*time.Second, func(r record) bool {
			return strings.HasPrefix(r.Msg, "rota: claim failed") && strings.Contains(r.str("error"), redis.ErrNotMigrated.Error())
		})
	}
	// What a node held at the flush may still run: the jobs running, and those its last claim
	// took ahead of a free slot, at most as many again (a queue's claims never hold more than
	// twice MaxWorkers). Nothing claimed after the flush may: there is nothing left to claim, and
	// no node writes the namespace again (below). The log is read again here, not trusted to
	// have settled: a held job whose run a stalled machine delayed past the quiet second above
	// still counts against the bound, and is not taken for a new claim.
	maxHeld := len(ids) * 2 * rota.QueueMaxWorkersDefault
	if ranAfter := len(c.runs(t)) - ranBefore; ranAfter > maxHeld {
		t.Errorf("%d jobs ran after the flush; only the %d the nodes can hold claimed at once may", ranAfter, maxHeld)
	} else {
		t.Logf("%d jobs ran before the flush, %d were held at it and ran after (at most %d can be held at once)",
			ranBefore, ranAfter, maxHeld)
	}
	for _, n := range c.nodes {
		if n.exited() {
			t.Errorf("node %s exited after the flush: %v", n.id, n.err)
		}
		t.Logf("node %s after the flush: %s", n.id, failureSummary(n, flushed))
	}
	if keys := c.namespaceKeys(t); len(keys) > 0 {
		slices.Sort(keys)
		t.Errorf("the flushed namespace was written again by the nodes (%d keys): %v", len(keys), keys[:min(len(keys), 20)])
	}

	// The operator migrates again: a new identity, which each node's election reports.
	remigrated := time.Now()
	c.rota("migrate")
	for _, id := range ids {
		r := c.node(id).waitRecordAfter(t, remigrated, 15*time.Second, func(r record) bool {
			return strings.HasPrefix(r.Msg, "rota: store identity changed")
		})
		t.Logf("node %s after the new migration: %s", id, r.Msg)
	}
	// The new namespace works: its jobs run exactly once. Their keys are new (ids start again at
	// 1), so their runs are told from the old ones by a prefix.
	const again = 100
	logBefore := c.runs(t)
	newIDs := c.insertScriptsPrefixed(t, appendScript, again, "m")
	c.waitCompleted(t, again, time.Minute)
	runs := c.runs(t)
	bad := checkJobs(t)
	for i, id := range newIDs {
		key := fmt.Sprintf("m%d", i)
		if len(runs[key]) != 1 {
			bad.Errorf("job %d (%s) of the migrated namespace ran %d times, on %v; want once", id, key, len(runs[key]), runs[key])
		}
	}
	for key, nodes := range runs {
		if !strings.HasPrefix(key, "m") && len(nodes) != len(logBefore[key]) {
			bad.Errorf("job %s of the flushed namespace ran again after the new migration: %v", key, nodes)
		}
	}
}

// isFailure reports whether r is a warning or an error.
func isFailure(r record) bool { return r.Level == "WARN" || r.Level == "ERROR" }

// waitRecordAfter polls the node's log until a record logged at or after since matches, and
// returns it.
func (n *node) waitRecordAfter(t *testing.T, since time.Time, within time.Duration, match func(record) bool) record {
	t.Helper()
	var found record
	ok := eventually(within, pollEvery, func() bool {
		for _, r := range parseLog(n.out.String()) {
			if !r.Time.Before(since) && match(r) {
				found = r
				return true
			}
		}
		if n.exited() {
			t.Fatalf("node %s exited (%v):\n%s", n.id, n.err, n.out.String())
		}
		return false
	})
	if !ok {
		t.Fatalf("node %s logged no matching record within %v of %v:\n%s", n.id, within, since.Format(time.RFC3339Nano), tail(n.out.String(), 40))
	}
	return found
}

// failureSummary counts the node's warnings and errors since since, by message.
func failureSummary(n *node, since time.Time) string {
	counts := map[string]int{}
	for _, r := range parseLog(n.out.String()) {
		if isFailure(r) && !r.Time.Before(since) {
			counts[r.Msg]++
		}
	}
	var parts []string
	for _, msg := range slices.Sorted(func(yield func(string) bool) {
		for m := range counts {
			if !yield(m) {
				return
			}
		}
	}) {
		parts = append(parts, fmt.Sprintf("%d× %q", counts[msg], msg))
	}
	return strings.Join(parts, ", ")
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// insertScriptsPrefixed is insertScripts with keys PREFIX0…PREFIX(n-1).
func (c *cluster) insertScriptsPrefixed(t *testing.T, script string, n int, prefix string) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	batch := make([]rota.InsertManyParams, n)
	for i := range batch {
		batch[i].Args = builtin.ExecArgs{Program: "sh", Args: []string{"-c", script, fmt.Sprintf("%s%d", prefix, i), c.jobLogPath()}}
	}
	res, err := c.client.InsertMany(ctx, batch)
	if err != nil {
		t.Fatalf("insert %d jobs: %v", n, err)
	}
	ids := make([]int64, len(res))
	for i, r := range res {
		ids[i] = r.Job.ID
	}
	return ids
}
