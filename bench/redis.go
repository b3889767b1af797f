package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/redis"
)

// deleteBatch is how many keys one UNLINK of DeleteNamespace removes: large enough that a
// drain's 100,000 jobs go in a few hundred round trips, small enough that no single call stalls
// the server for other clients.
const deleteBatch = 500

// errorLogger is quietLogger without the warnings, for stores whose warnings were shown already.
var errorLogger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))

// Redis returns an Opener that creates each store in a new namespace of the Redis at url and
// deletes that namespace's keys afterwards, so a benchmark never touches the server's other data
// (it never flushes a database). The namespace is the URL's ?namespace= (or "rota") followed by
// -bench- and a random suffix.
func Redis(url string) Opener {
	// The server's settings are the same for every workload: warn about them (persistence off,
	// say) on the first store only, not once per workload.
	var warned atomic.Bool
	return func(ctx context.Context) (store.Store, func() error, error) {
		logger := quietLogger
		if warned.Swap(true) {
			logger = errorLogger
		}
		_, base, err := redis.ParseURL(url)
		if err != nil {
			return nil, nil, err
		}
		if base == "" {
			base = redis.NamespaceDefault
		}
		ns := base + "-bench-" + randomHex(4)
		st, err := redis.Open(ctx, url, redis.WithNamespace(ns), redis.WithAutoMigrate(), redis.WithLogger(logger))
		if err != nil {
			return nil, nil, err
		}
		cleanup := func() error {
			// Closing first: a node's last writes (its registration's removal) land before the
			// keys go, and none appear after.
			closeErr := st.Close()
			ctx := context.Background()
			uo, _, err := redis.ParseURL(url)
			if err != nil {
				return errors.Join(closeErr, err)
			}
			c := goredis.NewUniversalClient(uo)
			defer c.Close()
			return errors.Join(closeErr, DeleteNamespace(ctx, c, ns))
		}
		return st, cleanup, nil
	}
}

// DeleteNamespace deletes every key of the rota namespace ns, found with SCAN MATCH on the
// namespace's own prefix, rota:{ns}:. On a Cluster every key of a namespace is in one slot; SCAN
// on a ClusterClient visits each primary.
func DeleteNamespace(ctx context.Context, c goredis.UniversalClient, ns string) error {
	match := "rota:{" + ns + "}:*"
	del := func(ctx context.Context, c goredis.UniversalClient) error {
		iter := c.Scan(ctx, 0, match, 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
			if len(keys) == deleteBatch {
				if err := c.Unlink(ctx, keys...).Err(); err != nil {
					return err
				}
				keys = keys[:0]
			}
		}
		if err := iter.Err(); err != nil {
			return err
		}
		if len(keys) > 0 {
			return c.Unlink(ctx, keys...).Err()
		}
		return nil
	}
	var err error
	if cc, ok := c.(*goredis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *goredis.Client) error { return del(ctx, node) })
	} else {
		err = del(ctx, c)
	}
	if err != nil {
		return fmt.Errorf("delete redis namespace %s: %w", ns, err)
	}
	return nil
}
