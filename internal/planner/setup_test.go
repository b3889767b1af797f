package planner

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/internal/pgtest"
	"github.com/rotahq/rota/internal/redistest"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/postgres"
	"github.com/rotahq/rota/store/redis"
	"github.com/rotahq/rota/store/sqlite"
)

// start is where every test's fake clock starts: not on a whole second, like a real clock.
var start = time.Date(2031, 3, 4, 5, 6, 7, 250_000_000, time.UTC)

// opener opens n handles on one fresh store whose time is clk's: n nodes (processes on one
// SQLite file, or nodes sharing a PostgreSQL schema).
type opener func(t *testing.T, clk clockwork.Clock, n int) []store.Store

var backends = map[string]opener{
	"sqlite": func(t *testing.T, clk clockwork.Clock, n int) []store.Store {
		path := filepath.Join(t.TempDir(), "rota.db")
		out := make([]store.Store, n)
		for i := range out {
			s, err := sqlite.Open(context.Background(), path, sqlite.WithClock(clk), sqlite.WithLogger(quiet))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			out[i] = s
		}
		return out
	},
	"redis": func(t *testing.T, clk clockwork.Clock, n int) []store.Store {
		url := redistest.URL(t)
		ns := redistest.Namespace(t, url)
		out := make([]store.Store, n)
		for i := range out {
			s, err := redis.Open(context.Background(), url, redis.WithNamespace(ns), redis.WithClock(clk),
				redis.WithAutoMigrate(), redis.WithLogger(quiet))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			out[i] = s
		}
		return out
	},
	"postgres": func(t *testing.T, clk clockwork.Clock, n int) []store.Store {
		url := pgtest.URL(t)
		schema := pgtest.Schema(t, url)
		out := make([]store.Store, n)
		for i := range out {
			s, err := postgres.Open(context.Background(), url, postgres.WithSchema(schema), postgres.WithClock(clk),
				postgres.WithAutoMigrate(), postgres.WithLogger(quiet))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			out[i] = s
		}
		return out
	},
}

var quiet = slog.New(slog.DiscardHandler)

// bundle is what a test needs: a fake clock, n nodes on one store, each with a planner that
// plans through a handle recording what it planned.
type bundle struct {
	t        *testing.T
	clk      *clockwork.FakeClock
	stores   []store.Store
	handles  []*handle
	planners []*Planner
	log      *planLog
}

// eachBackend runs test on SQLite, PostgreSQL and Redis, with n nodes.
func eachBackend(t *testing.T, n int, test func(t *testing.T, b *bundle)) {
	for _, name := range []string{"sqlite", "postgres", "redis"} {
		t.Run(name, func(t *testing.T) {
			clk := clockwork.NewFakeClockAt(start)
			b := &bundle{t: t, clk: clk, stores: backends[name](t, clk, n), log: &planLog{}}
			for _, s := range b.stores {
				b.addPlanner(s)
			}
			test(t, b)
		})
	}
}

// addPlanner adds a planner (a leader) on s. Planning failures fail the test: Pass only logs them.
func (b *bundle) addPlanner(s store.Scheduler) {
	h := &handle{Scheduler: s, log: b.log}
	b.handles = append(b.handles, h)
	b.planners = append(b.planners, &Planner{Store: h, Clock: b.clk, Logger: slog.New(failOnWarn{b.t}), Horizon: time.Minute})
}

// pass runs one pass of planner i.
func (b *bundle) pass(i int) { b.planners[i].Pass(b.t.Context()) }

func (b *bundle) upsert(name, expr string, missed store.MissedPolicy) store.Schedule {
	b.t.Helper()
	sc, err := b.stores[0].UpsertSchedule(b.t.Context(), store.Schedule{Name: name, Expr: expr, Zone: "UTC",
		Kind: "k", Queue: "default", Args: []byte(`{}`), MaxAttempts: 3, Missed: missed})
	if err != nil {
		b.t.Fatal(err)
	}
	return sc
}

func (b *bundle) schedule(name string) store.Schedule {
	b.t.Helper()
	sc, err := b.stores[0].GetSchedule(b.t.Context(), name)
	if err != nil {
		b.t.Fatal(err)
	}
	return sc
}

// planned is a job of a schedule as the store holds it, with the occurrence it was planned for.
type planned struct {
	job        *store.JobRow
	occurrence time.Time
}

// jobs returns the jobs schedule name planned, by id, cancelled ones included.
func (b *bundle) jobs(name string) []planned {
	b.t.Helper()
	var out []planned
	for p := (store.ListParams{Limit: 500}); ; {
		page, err := b.stores[0].List(b.t.Context(), p)
		if err != nil {
			b.t.Fatal(err)
		}
		if len(page) == 0 {
			return out
		}
		for _, j := range page {
			if j.Schedule == name {
				out = append(out, planned{job: j, occurrence: occurrenceOf(b.t, j)})
			}
		}
		p.AfterID = page[len(page)-1].ID
	}
}

func occurrenceOf(t *testing.T, j *store.JobRow) time.Time {
	t.Helper()
	var meta map[string]string
	if err := json.Unmarshal(j.Metadata, &meta); err != nil {
		t.Fatalf("job %d: metadata %s: %v", j.ID, j.Metadata, err)
	}
	at, err := time.Parse(time.RFC3339, meta[MetadataOccurrence])
	if err != nil {
		t.Fatalf("job %d: %s: %v", j.ID, MetadataOccurrence, err)
	}
	return at
}

// handle is a node's store as its planner sees it. It records the occurrences of every plan that
// succeeded, so that an occurrence planned twice is seen even where a unique key kept the store
// from inserting its job twice (a key protects only while its job is kept), and it can run a hook
// inside a pass: after the planner read the schedules, before it plans.
type handle struct {
	store.Scheduler
	log *planLog
	// beforePlan, when set, runs once before the next PlanSchedule.
	beforePlan func()
	// lost counts the plans that lost the compare-and-set.
	lost int
}

func (h *handle) PlanSchedule(ctx context.Context, name string, from, to time.Time, jobs []store.InsertParams) (bool, error) {
	if hook := h.beforePlan; hook != nil {
		h.beforePlan = nil
		hook()
	}
	ok, err := h.Scheduler.PlanSchedule(ctx, name, from, to, jobs)
	if ok {
		h.log.add(name, jobs)
	} else if err == nil {
		h.lost++
	}
	return ok, err
}

// planLog is every occurrence every planner planned, in the order of the plans.
type planLog struct {
	mu          sync.Mutex
	occurrences map[string][]time.Time
}

func (l *planLog) add(name string, jobs []store.InsertParams) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.occurrences == nil {
		l.occurrences = make(map[string][]time.Time)
	}
	for _, j := range jobs {
		var meta map[string]string
		_ = json.Unmarshal(j.Metadata, &meta)
		at, _ := time.Parse(time.RFC3339, meta[MetadataOccurrence])
		l.occurrences[name] = append(l.occurrences[name], at)
	}
}

func (l *planLog) of(name string) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.occurrences[name]...)
}

// failOnWarn fails the test on every warning: Pass logs a failed plan instead of returning it.
type failOnWarn struct{ t *testing.T }

func (h failOnWarn) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h failOnWarn) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h failOnWarn) WithGroup(string) slog.Handler                { return h }
func (h failOnWarn) Handle(_ context.Context, r slog.Record) error {
	var attrs []any
	r.Attrs(func(a slog.Attr) bool { attrs = append(attrs, a); return true })
	h.t.Errorf("planner warned: %s %v", r.Message, attrs)
	return nil
}
