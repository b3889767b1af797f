package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rotahq/rota/store"
)

// ErrNotReplicated is wrapped, with store.ErrUnavailable, by the error of a state-changing call
// WithWaitReplicas whose writes fewer replicas than asked acknowledged in time. The write was
// applied on the primary: only its copy on the replicas is in doubt.
var ErrNotReplicated = errors.New("written on the primary but not yet on enough replicas")

// writer returns what a state-changing call sends its commands through, and a release for when
// it is done. Without WithWaitReplicas that is the shared client. With it, it is one connection
// taken from the pool for the call: WAIT counts the acknowledgements of the writes made on its
// own connection, so the script (or transaction) and its WAIT must share one. On a Cluster it is
// a connection to the primary of the namespace's slot, which holds all its keys.
func (s *Store) writer(ctx context.Context) (goredis.Cmdable, func(), error) {
	if s.cfg.waitReplicas <= 0 {
		return s.rdb, func() {}, nil
	}
	var node *goredis.Client
	switch c := s.rdb.(type) {
	case *goredis.Client:
		node = c
	case *goredis.ClusterClient:
		var err error
		if node, err = c.MasterForKey(ctx, s.keys[0]); err != nil {
			return nil, nil, s.fail("find the namespace's primary", err)
		}
	default:
		return nil, nil, fmt.Errorf("redis: wait for replicas: unsupported client %T", s.rdb)
	}
	conn := node.Conn()
	return conn, func() { conn.Close() }, nil
}

// waitReplicas runs WAIT on w, the connection op's writes went through, when the store waits for
// replicas. Fewer acknowledgements than asked is an error wrapping ErrNotReplicated and
// store.ErrUnavailable: the caller cannot know whether a failover now would keep the write.
func (s *Store) waitReplicas(ctx context.Context, w goredis.Cmdable, op string) error {
	if s.cfg.waitReplicas <= 0 {
		return nil
	}
	waiter, ok := w.(interface {
		Wait(ctx context.Context, numReplicas int, timeout time.Duration) *goredis.IntCmd
	})
	if !ok { // writer returns a *redis.Conn whenever the store waits
		return fmt.Errorf("redis: %s: wait for replicas: %T cannot WAIT", op, w)
	}
	acked, err := waiter.Wait(ctx, s.cfg.waitReplicas, s.cfg.waitTimeout).Result()
	if err != nil {
		return fmt.Errorf("redis: %s: the write is on the primary, but waiting for %d replicas failed: %w",
			op, s.cfg.waitReplicas, s.fail("wait", err))
	}
	if acked < int64(s.cfg.waitReplicas) {
		return fmt.Errorf("redis: %s: the write is on the primary but on only %d of %d replicas after %v: %w: %w",
			op, acked, s.cfg.waitReplicas, s.cfg.waitTimeout, ErrNotReplicated, store.ErrUnavailable)
	}
	return nil
}
