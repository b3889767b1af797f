package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/rotahq/rota/bench"
)

// asynqTarget runs Asynq on its defaults, on one Redis database that the benchmark owns: it is
// flushed before and after every workload, and refused if it holds keys that are not Asynq's.
// Only the concurrency is set, to the workload's worker count (Asynq's default is one worker
// per CPU).
type asynqTarget struct {
	addr string
	db   int
}

func (t *asynqTarget) Name() string { return "asynq-redis" }

func (t *asynqTarget) Open(ctx context.Context) (bench.Instance, error) {
	rdb := redis.NewClient(&redis.Options{Addr: t.addr, DB: t.db})
	if err := ownDB(ctx, rdb); err != nil {
		rdb.Close()
		return nil, err
	}
	opt := asynq.RedisClientOpt{Addr: t.addr, DB: t.db}
	return &asynqInstance{rdb: rdb, opt: opt, client: asynq.NewClient(opt)}, nil
}

// ownDB empties the benchmark's Redis database after checking that only Asynq (that is, an
// earlier run of this benchmark) wrote there, so a wrong -redis-db cannot wipe someone's data.
func ownDB(ctx context.Context, rdb *redis.Client) error {
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "asynq:") {
			return fmt.Errorf("redis database %d holds %q, which is not Asynq's: choose an empty database with -redis-db", rdb.Options().DB, k)
		}
	}
	return rdb.FlushDB(ctx).Err()
}

type asynqInstance struct {
	rdb    *redis.Client
	opt    asynq.RedisClientOpt
	client *asynq.Client
}

func (a *asynqInstance) Insert(ctx context.Context, seq int64) error {
	payload, _ := json.Marshal(benchArgs{Seq: seq})
	_, err := a.client.EnqueueContext(ctx, asynq.NewTask("bench", payload))
	return err
}

// InsertBatch: Asynq enqueues one task per call.
func (a *asynqInstance) InsertBatch(context.Context, []int64) error { return bench.ErrNoBatch }

func (a *asynqInstance) Workers(n int, h bench.Hooks) (bench.Runner, error) {
	srv := asynq.NewServer(a.opt, asynq.Config{Concurrency: n, LogLevel: asynq.WarnLevel})
	handler := asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		var args benchArgs
		if err := json.Unmarshal(t.Payload(), &args); err != nil {
			return err
		}
		h.Started(args.Seq)
		// Asynq has no completion events: a job counts when its handler returns, a moment
		// before Asynq records it done. With 100 workers that favours Asynq by at most the
		// last 100 acknowledgements of a drain.
		h.Completed()
		return nil
	})
	return &asynqRunner{srv: srv, handler: handler}, nil
}

func (a *asynqInstance) Close() error {
	err := a.client.Close()
	if ferr := a.rdb.FlushDB(context.Background()).Err(); err == nil {
		err = ferr
	}
	a.rdb.Close()
	return err
}

type asynqRunner struct {
	srv     *asynq.Server
	handler asynq.Handler
}

func (r *asynqRunner) Start(context.Context) error { return r.srv.Start(r.handler) }

func (r *asynqRunner) Stop(context.Context) error {
	r.srv.Shutdown()
	return nil
}
