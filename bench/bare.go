package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/store/sqlite"
)

// SQLiteBare is the physical limit of a drain on SQLite, to measure rota's beside: no runtime,
// one loop that claims up to bareBatch jobs and completes them in one transaction, on a file
// with rota's schema and pragmas (the jobs are inserted by rota's client). The loop writes what a
// claim and a completion must (state, attempt, fence, owner, lease, times) and nothing more: no
// queue counts, no limits, no pause check, no expiry, no heartbeat, no events. Only the drain
// workloads mean anything for it; it is not a job system.
func SQLiteBare(dir string) Target { return &bareTarget{open: SQLite(dir)} }

// bareBatch is how many jobs one transaction of the bare loop claims and completes.
const bareBatch = 100

type bareTarget struct{ open Opener }

func (*bareTarget) Name() string { return "sqlite-bare" }

func (b *bareTarget) Open(ctx context.Context) (Instance, error) {
	st, cleanup, err := b.open(ctx)
	if err != nil {
		return nil, err
	}
	s, ok := st.(*sqlite.Store)
	if !ok {
		cleanup()
		return nil, fmt.Errorf("sqlite-bare: %T is not a SQLite store", st)
	}
	return &bareInstance{rotaInstance: rotaInstance{store: st, cleanup: cleanup,
		client: rota.NewClient(st, &rota.ClientConfig{Logger: quietLogger})}, db: s}, nil
}

type bareInstance struct {
	rotaInstance
	db *sqlite.Store
}

func (b *bareInstance) Workers(_ int, h Hooks) (Runner, error) {
	return &bareRunner{db: b.db, hooks: h, stop: make(chan struct{}), done: make(chan struct{})}, nil
}

// bareRunner is the loop, on one goroutine: a single writer is all SQLite has.
type bareRunner struct {
	db    *sqlite.Store
	hooks Hooks
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	err   error
}

// The loop's statements: the claim is rota's order on rota's claim index.
const (
	bareClaimSQL = `UPDATE jobs SET state = 'running', attempt = attempt + 1, fence = fence + 1,
		owner = 'bare', attempted_by = 'bare', lease_until = ?1, attempted_at = ?2
	WHERE id IN (SELECT id FROM jobs INDEXED BY jobs_claim
		WHERE queue = 'default' AND state = 'available' AND run_at <= ?2
		ORDER BY priority DESC, run_at, id LIMIT ?3)
	RETURNING id, args`
	bareCompleteSQL = `UPDATE jobs SET state = 'completed', finalized_at = ?1, owner = NULL, lease_until = NULL
	WHERE id IN (SELECT value FROM json_each(?2))`
)

func (r *bareRunner) Start(context.Context) error {
	go func() {
		defer close(r.done)
		for {
			select {
			case <-r.stop:
				return
			default:
			}
			n, err := r.batch()
			if err != nil {
				r.err = err
				return
			}
			if n == 0 {
				select {
				case <-r.stop:
					return
				case <-time.After(time.Millisecond):
				}
			}
		}
	}()
	return nil
}

// batch claims and completes up to bareBatch jobs in one transaction.
func (r *bareRunner) batch() (int, error) {
	ctx := context.Background()
	tx, err := r.db.DB().BeginTx(ctx, nil) // BEGIN IMMEDIATE: see sqlite.Store.DB
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	now := time.Now()
	rows, err := tx.QueryContext(ctx, bareClaimSQL, now.Add(time.Minute).UnixMicro(), now.UnixMicro(), bareBatch)
	if err != nil {
		return 0, err
	}
	var ids []string
	var seqs []int64
	for rows.Next() {
		var id int64
		var args []byte
		if err := rows.Scan(&id, &args); err != nil {
			rows.Close()
			return 0, err
		}
		var a Args
		if err := json.Unmarshal(args, &a); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, fmt.Sprint(id))
		seqs = append(seqs, a.Seq)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	for _, seq := range seqs {
		r.hooks.Started(seq) // the "handler"
	}
	if _, err := tx.ExecContext(ctx, bareCompleteSQL, time.Now().UnixMicro(), "["+strings.Join(ids, ",")+"]"); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	for range ids {
		r.hooks.Completed()
	}
	return len(ids), nil
}

func (r *bareRunner) Stop(context.Context) error {
	r.once.Do(func() { close(r.stop) })
	<-r.done
	return r.err
}
