package redis

import (
	"context"
	"fmt"
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
func BenchmarkScriptCPU(b *testing.B) {
	url, _ := redistest.Server(b)
	c := redistest.Client(b, url)
	ctx := context.Background()
	cpu := func() time.Duration {
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
	phases := []string{"insert100", "insert1", "claim1", "claim100", "complete1", "complete100", "release", "depclaim100", "depcomplete100", "workflow",
		"wfrelease", "wfclaim100", "wfcomplete100"}
	spent := make(map[string]time.Duration)
	for i := range b.N {
		s := openURL(b, url, fmt.Sprintf("cpu-%d", i), WithAutoMigrate())
		measure := func(phase string, jobs int, f func()) {
			before := cpu()
			f()
			spent[phase] += (cpu() - before) / time.Duration(jobs)
		}
		batch := make([]store.InsertParams, 100)
		measure("insert100", scriptCPUJobs, func() {
			for n := 0; n < scriptCPUJobs; n += len(batch) {
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
		measure("claim100", scriptCPUJobs, func() {
			for len(claimed) < scriptCPUJobs+ones {
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
		b.ReportMetric(float64(spent[p].Nanoseconds())/float64(b.N)/1000, "µs-cpu/"+p)
	}
	b.ReportMetric(0, "ns/op") // one op is the whole measurement; its time says nothing
}
