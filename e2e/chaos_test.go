package e2e

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/builtin"
)

// The chaos suite's knobs. Its default run is the README test command's: two minutes of faults
// per store. A soak is the same test, longer:
//
//	go test ./e2e -run TestChaos -timeout 4h -chaos.duration 1h -v
var (
	chaosDuration = flag.Duration("chaos.duration", 2*time.Minute, "chaos suite: how long faults are injected, per store")
	chaosSeed     = flag.Uint64("chaos.seed", 0, "chaos suite: the seed of the fault schedule and the workload (0: a new one, printed)")
	chaosNodes    = flag.Int("chaos.nodes", 3, "chaos suite: rota serve processes per store")
	chaosStores   = flag.String("chaos.stores", "sqlite,postgres,redis", "chaos suite: the stores to run on")
)

// TestChaos runs rota's promises under combined faults, on each store: several `rota serve`
// processes run a mix of jobs (plain, delayed, unique, a queue limited to one running job
// fleet-wide, a schedule firing every second, slow jobs that outlive a paused node's lease,
// every one an exec program that records its side effect under its fence) while a seeded schedule kills, pauses and restarts nodes, cuts the
// store's connections, restarts the store and fills its disk, one fault or two at once. When the
// faults stop, every job must end and the invariants hold (see checkChaos). The seed and the
// faults are printed; the same seed replays the same schedule.
func TestChaos(t *testing.T) {
	needBinary(t)
	seed := *chaosSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("chaos: seed %d (replay with -chaos.seed %d), %v of faults per store, %d nodes", seed, seed, *chaosDuration, *chaosNodes)
	for _, kind := range strings.Split(*chaosStores, ",") {
		t.Run(kind, func(t *testing.T) {
			if kind == "redis" {
				sharedRedis(t) // skip (or fail in CI) as the other Redis tests do when there is none
			}
			runChaos(t, newChaosEnv(t, kind), seed)
		})
	}
}

// The programs of the suite's jobs. $0 is the job's key, $1 the directory of the records.
const (
	// fencedScript records its run under its fence, then makes the job's side effect, the job's
	// file holding its fence, under a lock, refusing to overwrite a newer fence: a fenced write,
	// as a careful program makes one. Its output names its fence, so the result the store kept
	// says which attempt's outcome it is.
	fencedScript = `echo "$0 $ROTA_JOB_FENCE" >> "$1/runs.log"; ` +
		`exec 9>>"$1/fx/$0.lock"; flock 9; cur=$(cat "$1/fx/$0" 2>/dev/null || echo 0); ` +
		`if [ "$ROTA_JOB_FENCE" -lt "$cur" ]; then echo "$0 $ROTA_JOB_FENCE $cur" >> "$1/stale.log"; echo "fence $ROTA_JOB_FENCE"; exit 0; fi; ` +
		`echo "$ROTA_JOB_FENCE" > "$1/fx/$0"; echo "fence $ROTA_JOB_FENCE"`
	// slowFencedScript is fencedScript after a pause of 6 s in its first attempt, longer than the job
	// lease, and of 2 s in later ones: a node paused past its lease leaves this program running,
	// the job is claimed again, and the first attempt's write and outcome come after the second
	// attempt's write, or while it still runs, with an older fence: the write must be refused by
	// the program, the outcome by the store.
	slowFencedScript = `if [ "$ROTA_JOB_ATTEMPT" = 1 ]; then sleep 6; else sleep 2; fi; ` + fencedScript
	// limitedScript records when it starts and ends, for the queue limited to one running job.
	limitedScript = `echo "s $0 $ROTA_JOB_FENCE $(date +%s%N)" >> "$1/one.log"; sleep 0.05; ` +
		`echo "e $0 $ROTA_JOB_FENCE $(date +%s%N)" >> "$1/one.log"`
	// cronScript records each run of an occurrence.
	cronScript = `echo "$ROTA_JOB_ID $ROTA_JOB_FENCE" >> "$1/cron.log"`
)

// chaosSchedule is the schedule of the suite: every second.
const chaosSchedule = "tick"

func runChaos(t *testing.T, env *chaosEnv, seed uint64) {
	c := env.c
	ctx := context.Background()
	if err := os.MkdirAll(filepath.Join(c.dir, "fx"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := c.client.SetLimit(ctx, rota.Limit{Scope: rota.LimitQueue, Name: "one", MaxRunning: 1}); err != nil {
		t.Fatalf("limit: %v", err)
	}
	cronArgs := builtin.ExecArgs{Program: "sh", Args: []string{"-c", cronScript, "cron", c.dir}}
	if _, err := c.client.UpsertSchedule(ctx, rota.Schedule{Name: chaosSchedule, Expr: "* * * * * *", Args: cronArgs}); err != nil {
		t.Fatalf("schedule: %v", err)
	}

	f := newFaults(t, env, seed)
	for i := range f.slots {
		f.slots[i] = env.startChaosNode(t, f.nodeID(i))
	}
	load := startChaosLoad(c, seed)
	start := time.Now()
	for time.Since(start) < *chaosDuration {
		f.step(t)
	}
	inserted, dups, insertErrs := load.stop()
	t.Logf("chaos: %d fault steps in %v; %d jobs inserted (%d inserts failed, as the store was down or full)",
		f.steps, time.Since(start).Round(time.Second), len(inserted), insertErrs)

	// Every node back, then the schedule removed (its occurrences not started end cancelled),
	// then every job must end.
	f.healAll(t)
	if err := retryStore(func() error { return c.client.DeleteSchedule(ctx, chaosSchedule) }); err != nil {
		t.Fatalf("remove the schedule: %v", err)
	}
	// A node that stopped claiming without exiting is not noticed by the jobs others ran for it:
	// each node gets a job only it serves, which must end like the others.
	for _, n := range f.slots {
		key := "live-" + slotQueue(n.id)
		var res *rota.InsertResult
		if err := retryStore(func() (err error) {
			res, err = c.client.Insert(ctx, builtin.ExecArgs{Program: "sh", Args: []string{"-c", fencedScript, key, c.dir}},
				&rota.InsertOpts{Queue: slotQueue(n.id)})
			return err
		}); err != nil {
			t.Fatalf("insert %s's job: %v", n.id, err)
		}
		inserted[res.Job.ID] = key
	}
	rows := waitAllFinal(t, c, 3*time.Minute, f)
	for _, n := range f.slots {
		n.stopGracefully(t)
	}
	v := checkChaos(t, c, rows, inserted, dups)
	t.Logf("chaos: %d jobs checked: %s", len(rows), v.summary)
	if len(v.problems) > 0 {
		t.Errorf("chaos: seed %d: %d invariants broken:\n%s\nfaults:\n%s", seed, len(v.problems),
			strings.Join(v.problems, "\n"), strings.Join(f.log, "\n"))
	} else {
		t.Logf("chaos: faults:\n%s", strings.Join(f.log, "\n"))
	}
}

// chaosLoad inserts the suite's jobs at about 20 a second until stopped.
type chaosLoad struct {
	done chan struct{}
	wg   sync.WaitGroup

	mu       sync.Mutex
	inserted map[int64]string // id → key, for every insert that returned
	dups     []duplicate
	errs     int
}

// duplicate is an insert the store answered with the job holding its unique key.
type duplicate struct {
	key    string
	holder int64
	at     time.Time
}

func startChaosLoad(c *cluster, seed uint64) *chaosLoad {
	l := &chaosLoad{done: make(chan struct{}), inserted: map[int64]string{}}
	rng := rand.New(rand.NewPCG(seed, 1)) // the workload's own stream
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-l.done:
				return
			case <-tick.C:
			}
			var key, script string
			opts := &rota.InsertOpts{}
			switch r := rng.IntN(10); {
			case r < 1:
				key, script = fmt.Sprintf("s%d", n), slowFencedScript
			case r < 4:
				key, script = fmt.Sprintf("p%d", n), fencedScript
			case r < 6:
				key, script = fmt.Sprintf("d%d", n), fencedScript
				opts.RunAt = time.Now().Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
			case r < 8:
				key, script = fmt.Sprintf("u%d", n), fencedScript
				opts.UniqueKey = fmt.Sprintf("uk%d", rng.IntN(4))
			default:
				key, script = fmt.Sprintf("o%d", n), limitedScript
				opts.Queue = "one"
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			at := time.Now()
			res, err := c.client.Insert(ctx, builtin.ExecArgs{Program: "sh", Args: []string{"-c", script, key, c.dir}}, opts)
			cancel()
			l.mu.Lock()
			if err != nil {
				l.errs++
			} else if !res.Duplicate {
				l.inserted[res.Job.ID] = key
			} else {
				l.dups = append(l.dups, duplicate{key: opts.UniqueKey, holder: res.Job.ID, at: at})
			}
			l.mu.Unlock()
		}
	}()
	return l
}

// stop ends the inserts and returns what was inserted, and the inserts answered as duplicates.
func (l *chaosLoad) stop() (map[int64]string, []duplicate, int) {
	close(l.done)
	l.wg.Wait()
	return l.inserted, l.dups, l.errs
}

// retryStore runs f until it succeeds, for up to a minute: the store may be coming back.
func retryStore(f func() error) error {
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err = f(); err == nil {
			return nil
		}
	}
	return err
}

// waitAllFinal waits until every job of the store has reached a final state and returns them
// all. On a timeout it fails, naming the jobs that did not end.
func waitAllFinal(t *testing.T, c *cluster, within time.Duration, f *faults) []*rota.JobRow {
	t.Helper()
	var rows []*rota.JobRow
	var open []string
	var lastErr error
	ok := eventually(within, time.Second, func() bool {
		var err error
		rows, err = allJobs(c)
		if lastErr = err; err != nil {
			return false
		}
		open = open[:0]
		for _, j := range rows {
			if !j.State.Final() {
				open = append(open, fmt.Sprintf("%d (%s, attempt %d)", j.ID, j.State, j.Attempt))
			}
		}
		return len(open) == 0
	})
	if !ok {
		if len(open) > 20 {
			open = append(open[:20], "…")
		}
		t.Fatalf("chaos: jobs not final %v after the faults stopped (last error %v): %s\nfaults:\n%s",
			within, lastErr, strings.Join(open, ", "), strings.Join(f.log, "\n"))
	}
	return rows
}

// allJobs lists every job of the store, oldest first.
func allJobs(c *cluster) ([]*rota.JobRow, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*rota.JobRow
	for after := int64(0); ; {
		page, err := c.client.List(ctx, rota.ListParams{AfterID: after, Limit: 1000})
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < 1000 {
			return out, nil
		}
		after = page[len(page)-1].ID
	}
}
