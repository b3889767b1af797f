package bench

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rotahq/rota/internal/rediskeys"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/redis"
)

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
			return errors.Join(closeErr, rediskeys.Delete(ctx, c, ns))
		}
		return st, cleanup, nil
	}
}
