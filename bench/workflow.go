package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store"
)

// Workflow workloads measure what dependencies cost: they run rota only (other systems' graphs
// differ too much to put side by side) and compare each with the plain drain on the same store.

// FanResult is a fan-out/fan-in run: one root step, Steps steps waiting for it, one final step
// waiting for them all; against a plain drain of Steps jobs on a fresh store of the same kind.
type FanResult struct {
	Steps int `json:"steps"`
	// Insert is how long inserting the workflow took, which Fan leaves out.
	Insert time.Duration `json:"insert_ns"`
	Fan    time.Duration `json:"fan_ns"`
	Drain  time.Duration `json:"drain_ns"`
	// FanCPU and DrainCPU are the machine's CPU time over Fan and Drain (see machineBusy): where
	// the workflow's extra time goes when the machine is busy throughout.
	FanCPU   time.Duration `json:"fan_cpu_ns,omitempty"`
	DrainCPU time.Duration `json:"drain_cpu_ns,omitempty"`
}

// Ratio is how much longer the workflow took than the drain.
func (r FanResult) Ratio() float64 { return r.Fan.Seconds() / r.Drain.Seconds() }

// ChainResult is a chain of Steps steps, each waiting for the one before, on a node that ran a
// short chain first: Gap is the time from one step's start to the next one's, the steps being
// no-ops: the first one's completion written, the next released, claimed and started. Elapsed
// runs from the chain's insert to its last step's start.
type ChainResult struct {
	Steps   int           `json:"steps"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Gap     *Percentiles  `json:"gap"`
}

// stepArgs is a workflow step of the benchmarks: a no-op that says when it ran.
type stepArgs struct {
	Seq int `json:"seq"`
}

func (stepArgs) Kind() string { return "bench-step" }

// FanOutIn queues a workflow of steps+2 steps and measures from the node's start until its last
// step completes, then does the same for a plain backlog of steps jobs, each on a fresh store.
func FanOutIn(ctx context.Context, open Opener, steps, workers int) (FanResult, error) {
	res := FanResult{Steps: steps}
	var err error
	if res.Insert, res.Fan, res.FanCPU, err = runFan(ctx, open, steps, workers); err != nil {
		return res, fmt.Errorf("fan-out/fan-in: %w", err)
	}
	drain, err := Run(ctx, Rota("rota", open), Drain, Config{Jobs: steps, Workers: workers})
	if err != nil {
		return res, fmt.Errorf("drain: %w", err)
	}
	res.Drain, res.DrainCPU = drain.Elapsed, drain.CPU
	return res, nil
}

func runFan(ctx context.Context, open Opener, steps, workers int) (insert, fan, cpu time.Duration, err error) {
	st, cleanup, err := open(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	defer cleanup()
	wf := rota.NewWorkflow()
	wf.Add("root", stepArgs{}, nil)
	names := make([]string, steps)
	for i := range steps {
		names[i] = fmt.Sprint("s", i)
		wf.Add(names[i], stepArgs{Seq: i}, nil).After("root")
	}
	wf.Add("final", stepArgs{}, nil).After(names...)
	client := rota.NewClient(st, &rota.ClientConfig{Logger: quietLogger})
	began := time.Now()
	ins, err := client.InsertWorkflow(ctx, wf)
	if err != nil {
		return 0, 0, 0, err
	}
	insert = time.Since(began)
	final := ins.Steps["final"].ID
	done := make(chan struct{})
	node, err := stepNode(st, workers, func(job *rota.Job[stepArgs]) {
		if job.ID == final {
			close(done)
		}
	})
	if err != nil {
		return 0, 0, 0, err
	}
	watch := startWatch()
	if err := node.Start(ctx); err != nil {
		return 0, 0, 0, err
	}
	defer node.Stop(context.Background())
	select {
	case <-done:
	case <-ctx.Done():
		return 0, 0, 0, ctx.Err()
	}
	fan, cpu = watch.read()
	return insert, fan, cpu, nil
}

// chainWarmUp is how many steps long the chain is that Chain runs first on its node, untimed:
// a node's first tens of milliseconds (connections opened, statements prepared and planned, the
// leader's first round of maintenance) are its start, not the step-to-step latency of a chain.
const chainWarmUp = 20

// chain is a workflow of n steps, each waiting for the one before, step i carrying seq(i).
func chain(n int, seq func(int) int) *rota.Workflow {
	wf := rota.NewWorkflow()
	for i := range n {
		s := wf.Add(fmt.Sprint("s", i), stepArgs{Seq: seq(i)}, nil)
		if i > 0 {
			s.After(fmt.Sprint("s", i-1))
		}
	}
	return wf
}

// Chain starts a node, runs a short chain on it to warm it up, then runs a chain of steps steps
// and records the gap between each step's start and the next one's.
func Chain(ctx context.Context, open Opener, steps int) (ChainResult, error) {
	res := ChainResult{Steps: steps}
	st, cleanup, err := open(ctx)
	if err != nil {
		return res, err
	}
	defer cleanup()
	client := rota.NewClient(st, &rota.ClientConfig{Logger: quietLogger})
	var mu sync.Mutex
	starts := make([]time.Time, steps)
	warm, done := make(chan struct{}), make(chan struct{})
	node, err := stepNode(st, WorkersDefault, func(job *rota.Job[stepArgs]) {
		if seq := job.Args.Seq; seq < 0 { // the warm-up's steps: -1 to -chainWarmUp
			if seq == -chainWarmUp {
				close(warm)
			}
			return
		}
		mu.Lock()
		defer mu.Unlock()
		starts[job.Args.Seq] = time.Now()
		if job.Args.Seq == steps-1 {
			close(done)
		}
	})
	if err != nil {
		return res, err
	}
	if err := node.Start(ctx); err != nil {
		return res, err
	}
	defer node.Stop(context.Background())
	if _, err := client.InsertWorkflow(ctx, chain(chainWarmUp, func(i int) int { return -(i + 1) })); err != nil {
		return res, err
	}
	select {
	case <-warm:
	case <-ctx.Done():
		return res, ctx.Err()
	}
	begin := time.Now()
	if _, err := client.InsertWorkflow(ctx, chain(steps, func(i int) int { return i })); err != nil {
		return res, err
	}
	select {
	case <-done:
	case <-ctx.Done():
		return res, ctx.Err()
	}
	res.Elapsed = time.Since(begin)
	mu.Lock()
	defer mu.Unlock()
	gaps := make([]time.Duration, 0, steps-1)
	for i := 1; i < steps; i++ {
		gaps = append(gaps, starts[i].Sub(starts[i-1]))
	}
	res.Gap = percentiles(gaps)
	return res, nil
}

// stepNode is a node on st running the benchmark's steps with workers slots; started is called
// at each step's start.
func stepNode(st store.Store, workers int, started func(*rota.Job[stepArgs])) (*rota.Node, error) {
	ws := rota.NewWorkers()
	rota.AddWorker(ws, rota.WorkFunc[stepArgs](func(ctx context.Context, job *rota.Job[stepArgs]) error {
		started(job)
		return nil
	}), nil)
	return rota.NewNode(rota.Config{
		Store: st, Workers: ws, Logger: quietLogger,
		Queues: map[string]rota.QueueConfig{rota.QueueDefault: {MaxWorkers: workers}},
	})
}
