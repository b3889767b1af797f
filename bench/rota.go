package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/jackc/pgx/v5"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/postgres"
	"github.com/rotahq/rota/store/sqlite"
)

// Opener returns a fresh, migrated, empty store, and a cleanup that closes it and removes what it
// stored.
type Opener func(ctx context.Context) (st store.Store, cleanup func() error, err error)

// Rota returns a Target that runs rota on its defaults on the stores open returns, one fresh store
// per workload. Only the queue's worker count is set, to the workload's.
func Rota(name string, open Opener) Target { return &rotaTarget{name: name, open: open} }

type rotaTarget struct {
	name string
	open Opener
}

func (t *rotaTarget) Name() string { return t.name }

func (t *rotaTarget) Open(ctx context.Context) (Instance, error) {
	st, cleanup, err := t.open(ctx)
	if err != nil {
		return nil, err
	}
	return &rotaInstance{store: st, cleanup: cleanup, client: rota.NewClient(st, &rota.ClientConfig{Logger: quietLogger})}, nil
}

// RotaApart returns a Target like Rota whose client inserts through a store of its own, opened
// by open on the same data, as a producer in another process does. On PostgreSQL an insert then
// reaches the node through NOTIFY (coalesced per queue every millisecond), not through the inserting
// store's wake-up of its own subscribers.
func RotaApart(name string, open func(ctx context.Context) (node, client store.Store, cleanup func() error, err error)) Target {
	return &rotaApartTarget{name: name, open: open}
}

type rotaApartTarget struct {
	name string
	open func(ctx context.Context) (node, client store.Store, cleanup func() error, err error)
}

func (t *rotaApartTarget) Name() string { return t.name }

func (t *rotaApartTarget) Open(ctx context.Context) (Instance, error) {
	st, client, cleanup, err := t.open(ctx)
	if err != nil {
		return nil, err
	}
	return &rotaInstance{store: st, cleanup: cleanup, client: rota.NewClient(client, &rota.ClientConfig{Logger: quietLogger})}, nil
}

// Args is the benchmark's no-op job.
type Args struct {
	Seq int64 `json:"seq"`
}

// Kind names the benchmark's job kind.
func (Args) Kind() string { return "bench" }

// quietLogger keeps a node's start and stop lines out of the results, but shows its warnings:
// a benchmark whose store failed should say so.
var quietLogger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

type rotaInstance struct {
	store   store.Store
	cleanup func() error
	client  *rota.Client
}

func (r *rotaInstance) Insert(ctx context.Context, seq int64) error {
	_, err := r.client.Insert(ctx, Args{Seq: seq}, nil)
	return err
}

func (r *rotaInstance) InsertBatch(ctx context.Context, seqs []int64) error {
	params := make([]rota.InsertManyParams, len(seqs))
	for i, seq := range seqs {
		params[i].Args = Args{Seq: seq}
	}
	_, err := r.client.InsertMany(ctx, params)
	return err
}

func (r *rotaInstance) Workers(n int, h Hooks) (Runner, error) {
	workers := rota.NewWorkers()
	rota.AddWorker(workers, rota.WorkFunc[Args](func(ctx context.Context, job *rota.Job[Args]) error {
		h.Started(job.Args.Seq)
		return nil
	}), nil)
	cfg := rota.Config{
		Store:   r.store,
		Workers: workers,
		Queues:  map[string]rota.QueueConfig{rota.QueueDefault: {MaxWorkers: n}},
		Logger:  quietLogger,
	}
	if h.Retention > 0 {
		cfg.Retention.Completed = h.Retention
		cfg.PruneInterval = min(h.Retention, rota.PruneIntervalDefault)
	}
	node, err := rota.NewNode(cfg)
	if err != nil {
		return nil, err
	}
	return &rotaRunner{node: node, completed: h.Completed}, nil
}

func (r *rotaInstance) Close() error { return r.cleanup() }

// rotaRunner counts completions from the node's events: an event is emitted once the completer
// has written the outcome, which is when a job is done as far as anyone else can see. It counts
// them in a handler, inline: a channel would drop events when full, and a dropped completion
// would stall the drain.
type rotaRunner struct {
	node      *rota.Node
	completed func()
}

func (r *rotaRunner) Start(ctx context.Context) error {
	r.node.Handle(func(ev rota.Event) {
		if ev.Type == rota.EventJobCompleted {
			r.completed()
		}
	})
	return r.node.Start(ctx)
}

func (r *rotaRunner) Stop(ctx context.Context) error { return r.node.Stop(ctx) }

// Size is the store's size on disk: the jobs table with its indexes on PostgreSQL, the database
// file (without its WAL) on SQLite.
func (r *rotaInstance) Size(ctx context.Context) (int64, error) {
	var n int64
	switch st := r.store.(type) {
	case *postgres.Store:
		err := st.Pool().QueryRow(ctx, `SELECT pg_total_relation_size($1::regclass)`,
			pgx.Identifier{st.Schema(), "jobs"}.Sanitize()).Scan(&n)
		return n, err
	case *sqlite.Store:
		err := st.DB().QueryRowContext(ctx, `SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`).Scan(&n)
		return n, err
	}
	return 0, fmt.Errorf("%T: %w", r.store, errors.ErrUnsupported)
}
