package redis

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/redistest"
	"github.com/rotahq/rota/store"
)

// scriptCPUJobs is how many plain jobs BenchmarkScriptCPU takes through each hot script.
const scriptCPUJobs = 20_000

// BenchmarkScriptCPU measures the CPU a private Redis's main thread spends per job in the hot
// scripts (insert in batches and one at a time, claim, complete, and the release of a root's
// dependents when it completes, per dependent, then their claims and completions, and the
// insert of a fan-out/fan-in workflow in one call, per step, and its run: the release, claims
// and completions of its steps, which count the final step off), as INFO cpu counts it: CPU
// time, not the wall time of the calls, so that a busy machine blurs the figures less than
// end-to-end benchmarks, which is what comparing two builds of the scripts needs:
//
//	go test ./store/redis -run '^$' -bench ScriptCPU -benchtime 3x
//
// On a shared host even CPU time drifts by a third from one minute to the next. With
// -callgrind, Redis runs under valgrind's callgrind and the figures are the thousands of
// instructions it executed per job (Kinstr/…), which repeat within a few percent:
//
//	go test ./store/redis -run '^$' -bench ScriptCPU -benchtime 1x -callgrind
//
// With -callgrind-out DIR as well, each phase's dump is kept as DIR/<phase>.callgrind, for
// callgrind_annotate --inclusive=yes; a redis-server built with symbols (Debian's has none) first
// in PATH names the Lua interpreter's functions too.
func BenchmarkScriptCPU(b *testing.B) {
	jobs, unit := scriptCPUJobs, "µs-cpu"
	var url string
	var cpu func() time.Duration // CPU time, or instructions as nanoseconds under callgrind
	keep := func(string) {}      // keeps the dump of the phase just measured (-callgrind-out)
	if *flagCallgrind {
		jobs, unit = scriptCPUJobs/4, "Kinstr"
		var last func() string
		url, cpu, last = callgrindServer(b)
		if dir := *flagCallgrindOut; dir != "" {
			keep = func(phase string) {
				data, err := os.ReadFile(last())
				if err == nil {
					err = os.WriteFile(filepath.Join(dir, phase+".callgrind"), data, 0o644)
				}
				if err != nil {
					b.Fatalf("-callgrind-out: %v", err)
				}
			}
		}
	} else {
		url, _ = redistest.Server(b)
		cpu = mainThreadCPU(b, url)
	}
	ctx := context.Background()
	phases := []string{"insert100", "insert1", "claim1", "claim100", "complete1", "complete100", "release", "depclaim100", "depcomplete100", "workflow",
		"wfrelease", "wfclaim100", "wfcomplete100"}
	spent := make(map[string]time.Duration)
	for i := range b.N {
		s := openURL(b, url, fmt.Sprintf("cpu-%d", i), WithAutoMigrate())
		measure := func(phase string, n int, f func()) {
			before := cpu()
			f()
			spent[phase] += (cpu() - before) / time.Duration(n)
			keep(phase)
		}
		batch := make([]store.InsertParams, 100)
		measure("insert100", jobs, func() {
			for n := 0; n < jobs; n += len(batch) {
				for j := range batch {
					batch[j] = store.InsertParams{Kind: "k", Queue: "default", MaxAttempts: 25, Args: fmt.Appendf(nil, `{"n":%d}`, n+j)}
				}
				if _, err := s.Insert(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
		})
		const ones = 2000
		measure("insert1", ones, func() {
			for n := range ones {
				p := store.InsertParams{Kind: "k", Queue: "default", MaxAttempts: 25, Args: fmt.Appendf(nil, `{"n":%d}`, n)}
				if _, err := s.Insert(ctx, []store.InsertParams{p}); err != nil {
					b.Fatal(err)
				}
			}
		})
		var claimed []*store.JobRow
		claim := func(max int) {
			rows, err := s.Claim(ctx, store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: max, Owner: "n", LeaseFor: time.Hour})
			if err != nil || len(rows) == 0 {
				b.Fatalf("claim after %d: %d jobs, %v", len(claimed), len(rows), err)
			}
			claimed = append(claimed, rows...)
		}
		complete := func(rows []*store.JobRow) {
			outs := make([]store.Outcome, 0, len(rows))
			for _, r := range rows {
				outs = append(outs, store.Outcome{ID: r.ID, Fence: r.Fence, State: store.StateCompleted})
			}
			if _, err := s.Complete(ctx, outs); err != nil {
				b.Fatal(err)
			}
		}
		// runReleased claims the n jobs a release made available and completes them, 100 at a
		// time, measured as <phase>claim100 and <phase>complete100.
		runReleased := func(phase string, n int) {
			claimed = claimed[:0]
			measure(phase+"claim100", n, func() {
				for len(claimed) < n {
					claim(100)
				}
			})
			measure(phase+"complete100", n, func() {
				for i := 0; i < len(claimed); i += 100 {
					complete(claimed[i:min(i+100, len(claimed))])
				}
			})
		}
		measure("claim1", ones, func() {
			for range ones {
				claim(1)
			}
		})
		measure("claim100", jobs, func() {
			for len(claimed) < jobs+ones {
				claim(100)
			}
		})
		measure("complete1", ones, func() {
			for _, r := range claimed[:ones] {
				complete([]*store.JobRow{r})
			}
		})
		measure("complete100", len(claimed)-ones, func() {
			for i := ones; i < len(claimed); i += 100 {
				complete(claimed[i:min(i+100, len(claimed))])
			}
		})
		const dependents = 5000
		res, err := s.Insert(ctx, []store.InsertParams{{Kind: "k", Queue: "default", MaxAttempts: 25, Args: []byte(`{}`)}})
		if err != nil {
			b.Fatal(err)
		}
		root := res[0].Job
		deps := make([]store.InsertParams, 1000)
		for n := 0; n < dependents; n += len(deps) {
			for j := range deps {
				deps[j] = store.InsertParams{Kind: "k", Queue: "default", MaxAttempts: 25, Args: []byte(`{}`), DependsOn: []int64{root.ID}}
			}
			if _, err := s.Insert(ctx, deps); err != nil {
				b.Fatal(err)
			}
		}
		claimed = claimed[:0]
		claim(1)
		measure("release", dependents, func() { complete(claimed) })
		// The released dependents, outside any workflow and waited for by nothing.
		runReleased("dep", dependents)
		wf := make([]store.InsertParams, dependents+2)
		for j := range wf {
			wf[j] = store.InsertParams{Kind: "k", Queue: "default", MaxAttempts: 25, Args: []byte(`{}`),
				Workflow: "wf", Step: fmt.Sprint("s", j)}
			if j > 0 && j <= dependents {
				wf[j].DependsOnIndex = []int{0}
			}
			if j == dependents+1 {
				for k := 1; k <= dependents; k++ {
					wf[j].DependsOnIndex = append(wf[j].DependsOnIndex, k)
				}
			}
		}
		measure("workflow", len(wf), func() {
			if _, err := s.Insert(ctx, wf); err != nil {
				b.Fatal(err)
			}
		})
		// The workflow runs: its root, then its steps in claims and completions of 100, each
		// of which counts the final step off.
		claimed = claimed[:0]
		claim(1)
		measure("wfrelease", dependents, func() { complete(claimed) })
		runReleased("wf", dependents)
		s.Close()
	}
	for _, p := range phases {
		b.ReportMetric(float64(spent[p].Nanoseconds())/float64(b.N)/1000, unit+"/"+p)
	}
	b.ReportMetric(0, "ns/op") // one op is the whole measurement; its time says nothing
}

var (
	flagCallgrind    = flag.Bool("callgrind", false, "BenchmarkScriptCPU: count Redis' instructions under valgrind's callgrind instead of its CPU time")
	flagCallgrindOut = flag.String("callgrind-out", "", "BenchmarkScriptCPU with -callgrind: keep each phase's callgrind dump in this directory as <phase>.callgrind")
)

// mainThreadCPU returns the CPU time the main thread of the Redis at url has spent, as INFO
// cpu reports it.
func mainThreadCPU(b *testing.B, url string) func() time.Duration {
	c := redistest.Client(b, url)
	ctx := context.Background()
	return func() time.Duration {
		info, err := c.Info(ctx, "cpu").Result()
		if err != nil {
			b.Fatal(err)
		}
		var total time.Duration
		for _, line := range strings.Split(info, "\r\n") {
			k, v, _ := strings.Cut(line, ":")
			if k == "used_cpu_user_main_thread" || k == "used_cpu_sys_main_thread" {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatal(err)
				}
				total += time.Duration(f * float64(time.Second))
			}
		}
		return total
	}
}

// callgrindServer starts a private redis-server under callgrind and returns its URL (with
// timeouts for a server some fifty times slower), the instructions it has executed so far (each
// reading asks callgrind for a dump of what it counted since the last one) and the path of the
// last reading's dump.
func callgrindServer(b *testing.B) (string, func() time.Duration, func() string) {
	for _, tool := range []string{"valgrind", "callgrind_control"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Fatalf("-callgrind needs %s: %v", tool, err)
		}
	}
	dir := b.TempDir()
	url, proc := redistest.ServerUnder(b, []string{"valgrind", "--tool=callgrind", "--dump-instr=no",
		"--callgrind-out-file=" + filepath.Join(dir, "out")})
	url += "?read_timeout=2m&write_timeout=2m"
	var total int64
	dumps := 0
	return url, func() time.Duration {
		if out, err := exec.Command("callgrind_control", "-d", strconv.Itoa(proc.Pid)).CombinedOutput(); err != nil {
			b.Fatalf("callgrind_control: %v: %s", err, out)
		}
		dumps++
		name := filepath.Join(dir, fmt.Sprintf("out.%d", dumps))
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			data, err := os.ReadFile(name)
			// The dump is complete once its totals line, near its end, is written.
			if i := bytes.Index(data, []byte("\ntotals: ")); err == nil && i >= 0 && bytes.HasSuffix(data, []byte("\n")) {
				line, _, _ := bytes.Cut(data[i+len("\ntotals: "):], []byte("\n"))
				n, err := strconv.ParseInt(string(line), 10, 64)
				if err != nil {
					b.Fatalf("callgrind dump %s: totals %q: %v", name, line, err)
				}
				total += n
				return time.Duration(total)
			}
			if time.Now().After(deadline) {
				b.Fatalf("callgrind wrote no dump %s: %v", name, err)
			}
		}
	}, func() string { return filepath.Join(dir, fmt.Sprintf("out.%d", dumps)) }
}
