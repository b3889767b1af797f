package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/rotahq/rota/store"
)

// execer runs statements inside one open write transaction: a group commit of the writer, or a
// caller's *sql.Tx (InsertTx). Code that writes jobs takes an execer so both paths share it.
type execer interface {
	exec(query string, args ...any) (sql.Result, error)
	query(query string, args ...any) (*sql.Rows, error)
}

// wtx is what one request sees of its group's transaction: statements, the time the request
// started, and the notifications to publish if it commits.
type wtx struct {
	w     *writer
	now   time.Time
	notes []store.Notification
}

// stmtCtx runs the writer's statements. It is never the caller's context: cancelling a statement
// interrupts the connection, and an interrupted write rolls back the whole transaction, taking
// the other requests of the group with it. A caller's context is checked before its request
// starts instead.
var stmtCtx = context.Background()

func (t *wtx) exec(query string, args ...any) (sql.Result, error) {
	st, err := t.w.cache.get(stmtCtx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(stmtCtx, args...)
}

func (t *wtx) query(query string, args ...any) (*sql.Rows, error) {
	st, err := t.w.cache.get(stmtCtx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(stmtCtx, args...)
}

func (t *wtx) notify(n ...store.Notification) { t.notes = append(t.notes, n...) }

// stmtCache prepares each distinct query once. SQLite spends a large share of a small statement's
// time compiling it; the hot paths run the same few queries (batched inserts have one query per
// batch size), so the cache stays small.
type stmtCache struct {
	prep  func(ctx context.Context, query string) (*sql.Stmt, error)
	stmts map[string]*sql.Stmt
}

func newStmtCache(prep func(ctx context.Context, query string) (*sql.Stmt, error)) *stmtCache {
	return &stmtCache{prep: prep, stmts: make(map[string]*sql.Stmt)}
}

func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := c.stmts[query]; ok {
		return st, nil
	}
	st, err := c.prep(ctx, query)
	if err != nil {
		return nil, err
	}
	c.stmts[query] = st
	return st, nil
}

func (c *stmtCache) close() {
	for q, st := range c.stmts {
		st.Close()
		delete(c.stmts, q)
	}
}

// txExec runs a caller's transaction. Its statements die with the call: they belong to the
// caller's connection.
type txExec struct {
	ctx   context.Context
	cache *stmtCache
}

func newTxExec(ctx context.Context, tx *sql.Tx) *txExec {
	return &txExec{ctx: ctx, cache: newStmtCache(tx.PrepareContext)}
}

func (x *txExec) exec(query string, args ...any) (sql.Result, error) {
	st, err := x.cache.get(x.ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(x.ctx, args...)
}

func (x *txExec) query(query string, args ...any) (*sql.Rows, error) {
	st, err := x.cache.get(x.ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(x.ctx, args...)
}
