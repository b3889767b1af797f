package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rotahq/rota/bench"
)

// bullmqTarget runs BullMQ, a Node.js library, on its defaults: bullmq/bench.mjs, run with node
// once per workload, implements the workload in its own process (BullMQ's producers and workers
// are Node objects, and a call across a pipe per job would measure the pipe) and prints what it
// measured as one JSON line. Only the Worker's concurrency is set, to the workload's worker count
// (BullMQ's default is 1).
//
// Every workload gets a key prefix of its own, rota-bench-bullmq-<random>, in database db, and the
// prefix's keys are deleted afterwards (by SCAN, never FLUSHDB), so the server's other data is
// never touched. The Go side needs no Node module to build: node and bullmq/node_modules are
// looked for when a workload runs.
type bullmqTarget struct {
	addr string
	db   int
	dir  string // the directory of bench.mjs and its node_modules
}

func (t *bullmqTarget) Name() string { return "bullmq-redis" }

// Open is never called: main runs the target through RunWorkload.
func (t *bullmqTarget) Open(context.Context) (bench.Instance, error) {
	return nil, errors.New("bullmq-redis runs whole workloads in Node: use RunWorkload")
}

// workloadRunner is a target that runs a whole workload itself, in another process, instead of
// being driven call by call through bench.Run.
type workloadRunner interface {
	RunWorkload(ctx context.Context, w bench.Workload, cfg bench.Config) (bench.Result, error)
}

// bullmqOutput is bench.mjs's JSON line.
type bullmqOutput struct {
	Jobs      int     `json:"jobs"`
	ElapsedNS int64   `json:"elapsed_ns"`
	CPUNS     int64   `json:"cpu_ns"`
	Latencies []int64 `json:"latencies_ns"`
	Error     string  `json:"error"`
}

// The LatencyOf strings of package bench, for the same workloads.
var bullmqLatencyOf = map[bench.Workload]string{
	bench.InsertMany: "one InsertMany call",
	bench.InsertOne:  "one Insert call",
	bench.Latency:    "insert returned → handler started",
}

func (t *bullmqTarget) RunWorkload(ctx context.Context, w bench.Workload, cfg bench.Config) (bench.Result, error) {
	res := bench.Result{System: t.Name(), Workload: w}
	fail := func(err error) (bench.Result, error) {
		res.Err = err.Error()
		return res, fmt.Errorf("%s %s: %w", res.System, res.Workload, err)
	}
	script, err := t.check()
	if err != nil {
		return fail(err)
	}
	prefix := "rota-bench-bullmq-" + randomHex(4)
	rdb := redis.NewClient(&redis.Options{Addr: t.addr, DB: t.db})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fail(fmt.Errorf("redis %s: %w", t.addr, err))
	}
	cfg = cfg.WithDefaults()
	cmd := exec.CommandContext(ctx, "node", script,
		"--workload", string(w),
		"--redis", t.addr, "--db", strconv.Itoa(t.db), "--prefix", prefix,
		"--jobs", strconv.Itoa(cfg.Jobs), "--batch", strconv.Itoa(cfg.Batch),
		"--concurrency", strconv.Itoa(cfg.Concurrency), "--workers", strconv.Itoa(cfg.Workers),
		"--rate", strconv.Itoa(cfg.Rate),
		"--duration-ms", strconv.FormatInt(cfg.Duration.Milliseconds(), 10),
		"--settle-ms", strconv.FormatInt(cfg.Settle.Milliseconds(), 10),
		"--warmup-ms", strconv.FormatInt(max(cfg.WarmUp.Milliseconds(), 0), 10))
	cmd.Dir = t.dir
	cmd.Stderr = os.Stderr
	out, runErr := cmd.Output()
	// The keys go whatever happened, and before the result is looked at.
	delErr := deletePrefix(context.Background(), rdb, prefix)

	var o bullmqOutput
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if jerr := json.Unmarshal(lines[len(lines)-1], &o); jerr != nil {
		if runErr == nil {
			runErr = jerr
		}
		return fail(fmt.Errorf("node %s: %w (stdout %q)", filepath.Base(script), runErr, out))
	}
	res.Jobs, res.Elapsed, res.CPU = o.Jobs, time.Duration(o.ElapsedNS), time.Duration(o.CPUNS)
	if len(o.Latencies) > 0 {
		ds := make([]time.Duration, len(o.Latencies))
		for i, ns := range o.Latencies {
			ds[i] = time.Duration(ns)
		}
		res.Latency, res.LatencyOf = bench.Summarize(ds), bullmqLatencyOf[w]
	}
	switch {
	case o.Error != "":
		return fail(errors.New(o.Error))
	case runErr != nil:
		return fail(fmt.Errorf("node: %w", runErr))
	case delErr != nil:
		return fail(delErr)
	}
	if res.Elapsed > 0 {
		res.JobsPerSec = float64(res.Jobs) / res.Elapsed.Seconds()
	}
	if res.Jobs > 0 {
		res.CPUPerJob = res.CPU / time.Duration(res.Jobs)
	}
	return res, nil
}

// check finds node and the installed bullmq module, and says how to get them when either is
// missing.
func (t *bullmqTarget) check() (script string, err error) {
	dir, err := filepath.Abs(t.dir)
	if err != nil {
		return "", err
	}
	script = filepath.Join(dir, "bench.mjs")
	if _, err := os.Stat(script); err != nil {
		return "", fmt.Errorf("no %s: run from bench/peers or point -bullmq-dir at bench/peers/bullmq", script)
	}
	if _, err := exec.LookPath("node"); err != nil {
		return "", errors.New("node is not installed (BullMQ is a Node.js library; Node 20 or later): install it, or leave bullmq-redis out of -systems")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "bullmq", "package.json")); err != nil {
		return "", fmt.Errorf("BullMQ is not installed: run `npm ci` in %s (it installs the versions package-lock.json pins)", dir)
	}
	return script, nil
}

// deletePrefix deletes every key under prefix (BullMQ's keys are prefix:queue:…), in batches.
func deletePrefix(ctx context.Context, rdb *redis.Client, prefix string) error {
	iter := rdb.Scan(ctx, 0, prefix+":*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) == 500 {
			if err := rdb.Unlink(ctx, keys...).Err(); err != nil {
				return err
			}
			keys = keys[:0]
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("delete redis prefix %s: %w", prefix, err)
	}
	if len(keys) > 0 {
		return rdb.Unlink(ctx, keys...).Err()
	}
	return nil
}
