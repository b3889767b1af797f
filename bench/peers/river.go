package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"

	"github.com/rotahq/rota/bench"
)

// riverOpener returns a driver on a fresh, migrated River schema, and a cleanup that removes it.
type riverOpener[TTx any] func(ctx context.Context) (driver riverdriver.Driver[TTx], schema string, cleanup func() error, err error)

// riverTarget runs River on either its defaults or the settings of its own benchmark
// (cmd/river/riverbench): a 2 ms fetch cooldown and a 20 ms fetch poll, where the defaults are
// 100 ms and 1 s, and 2,000 workers instead of the workload's 100.
type riverTarget[TTx any] struct {
	name      string
	open      riverOpener[TTx]
	benchmark bool
}

// River's own benchmark's settings: queue concurrency, fetch cooldown and poll interval.
const (
	riverBenchmarkWorkers  = 2_000
	riverBenchmarkCooldown = 2 * time.Millisecond
	riverBenchmarkPoll     = 20 * time.Millisecond
)

// riverSweep is set when -sweep varies the worker count: River's benchmark settings then run the
// swept count instead of their 2,000, so that the plot compares like with like.
var riverSweep bool

func (t *riverTarget[TTx]) Name() string { return t.name }

func (t *riverTarget[TTx]) Open(ctx context.Context) (bench.Instance, error) {
	driver, schema, cleanup, err := t.open(ctx)
	if err != nil {
		return nil, err
	}
	// The inserting client throttles its insert notifications by its own FetchCooldown: River's
	// benchmark settings insert with theirs, as River's own benchmark does (one client).
	icfg := &river.Config{Logger: quietLogger, Schema: schema}
	if t.benchmark {
		icfg.FetchCooldown, icfg.FetchPollInterval = riverBenchmarkCooldown, riverBenchmarkPoll
	}
	inserter, err := river.NewClient(driver, icfg)
	if err != nil {
		_ = cleanup()
		return nil, err
	}
	return &riverInstance[TTx]{target: t, driver: driver, schema: schema, cleanup: cleanup, inserter: inserter}, nil
}

type riverInstance[TTx any] struct {
	target   *riverTarget[TTx]
	driver   riverdriver.Driver[TTx]
	schema   string
	cleanup  func() error
	inserter *river.Client[TTx]
}

func (r *riverInstance[TTx]) Insert(ctx context.Context, seq int64) error {
	_, err := r.inserter.Insert(ctx, benchArgs{Seq: seq}, nil)
	return err
}

// InsertBatch uses InsertManyFast, River's fastest batch insert (COPY on PostgreSQL), so River is
// measured at its best; rota's InsertMany returns the inserted rows, which InsertManyFast does not.
func (r *riverInstance[TTx]) InsertBatch(ctx context.Context, seqs []int64) error {
	params := make([]river.InsertManyParams, len(seqs))
	for i, seq := range seqs {
		params[i].Args = benchArgs{Seq: seq}
	}
	_, err := r.inserter.InsertManyFast(ctx, params)
	return err
}

func (r *riverInstance[TTx]) Workers(n int, h bench.Hooks) (bench.Runner, error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, job *river.Job[benchArgs]) error {
		h.Started(job.Args.Seq)
		return nil
	}))
	cfg := &river.Config{
		Logger:  quietLogger,
		Schema:  r.schema,
		Workers: workers,
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: n}},
	}
	if r.target.benchmark {
		cfg.FetchCooldown, cfg.FetchPollInterval = riverBenchmarkCooldown, riverBenchmarkPoll
		if !riverSweep {
			cfg.Queues[river.QueueDefault] = river.QueueConfig{MaxWorkers: riverBenchmarkWorkers}
		}
	}
	client, err := river.NewClient(r.driver, cfg)
	if err != nil {
		return nil, err
	}
	return &riverRunner[TTx]{client: client, completed: h.Completed}, nil
}

func (r *riverInstance[TTx]) Close() error { return r.cleanup() }

// riverRunner counts completions from River's completion events, as River's own benchmark does:
// they are sent once the completer has written the job's state.
type riverRunner[TTx any] struct {
	client    *river.Client[TTx]
	completed func()
	unsub     func()
	quit      chan struct{}
}

func (r *riverRunner[TTx]) Start(ctx context.Context) error {
	events, unsub := r.client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: eventBuffer,
		Kinds:    []river.EventKind{river.EventKindJobCompleted},
	})
	r.unsub, r.quit = unsub, make(chan struct{})
	go func() {
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					return
				}
				if ev.Kind == river.EventKindJobCompleted {
					r.completed()
				}
			case <-r.quit:
				return
			}
		}
	}()
	return r.client.Start(ctx)
}

func (r *riverRunner[TTx]) Stop(ctx context.Context) error {
	err := r.client.Stop(ctx)
	r.unsub()
	close(r.quit)
	return err
}

// Preload fills River's table as bench.Config asks: queued jobs due in a day, inserted with
// InsertManyFast, and completed jobs written straight into river_job (on PostgreSQL only), as
// rota's preload writes its own.
func (r *riverInstance[TTx]) Preload(ctx context.Context, queued, retained int, progress func(int)) error {
	done := 0
	postgres := r.driver.DatabaseName() == riverdriver.DatabaseNamePostgres
	if retained > 0 && !postgres {
		return fmt.Errorf("river on %s: retained jobs: %w", r.driver.DatabaseName(), bench.ErrNoPreload)
	}
	for done < retained {
		n := min(100_000, retained-done)
		err := r.driver.GetExecutor().Exec(ctx, fmt.Sprintf(`INSERT INTO %s.river_job
			(args, attempt, attempted_at, created_at, finalized_at, kind, max_attempts, priority, queue, scheduled_at, state)
			SELECT '{"seq":-1}', 1, now(), now(), now(), 'bench', 25, 1, 'default', now(), 'completed'
			FROM generate_series(1, %d)`, pgx.Identifier{r.schema}.Sanitize(), n))
		if err != nil {
			return err
		}
		done += n
		progress(done)
	}
	at := time.Now().Add(24 * time.Hour)
	params := make([]river.InsertManyParams, 0, 10_000)
	for q := 0; q < queued; q += len(params) {
		params = params[:0]
		for i := q; i < min(q+10_000, queued); i++ {
			params = append(params, river.InsertManyParams{Args: benchArgs{Seq: -1}, InsertOpts: &river.InsertOpts{ScheduledAt: at}})
		}
		if _, err := r.inserter.InsertManyFast(ctx, params); err != nil {
			return err
		}
		progress(done + q + len(params))
	}
	if postgres {
		// As rota's preload leaves its table: vacuumed, analyzed, checkpointed.
		if err := r.driver.GetExecutor().Exec(ctx, fmt.Sprintf(`VACUUM ANALYZE %s.river_job`, pgx.Identifier{r.schema}.Sanitize())); err != nil {
			return err
		}
		_ = r.driver.GetExecutor().Exec(ctx, `CHECKPOINT`)
	}
	return nil
}
