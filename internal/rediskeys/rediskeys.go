// Package rediskeys names the keys of a rota namespace on Redis and deletes them. The store
// (store/redis) builds every key from Prefix; the benchmarks and the tests, which must clean up
// a namespace without a store and without flushing anyone else's data, delete by it. It imports
// no part of rota, so that the store's own tests and the helpers they use can both import it.
package rediskeys

import (
	"context"
	"fmt"

	goredis "github.com/redis/go-redis/v9"
)

// Prefix is what every key of namespace ns starts with. The braces are Redis Cluster's hash tag:
// every key of a namespace is in one slot, so one script may touch any of them.
func Prefix(ns string) string { return "rota:{" + ns + "}:" }

// deleteBatch is how many keys one UNLINK removes: large enough that a drain's 100,000 jobs go
// in a few hundred round trips, small enough that no single call stalls the server for other
// clients.
const deleteBatch = 500

// Delete deletes every key of namespace ns, found with SCAN MATCH on its own prefix, and nothing
// else: it never flushes a database. On a Cluster it visits each primary (the namespace's slot
// is on one of them).
func Delete(ctx context.Context, c goredis.UniversalClient, ns string) error {
	var err error
	if cc, ok := c.(*goredis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *goredis.Client) error { return deleteOn(ctx, node, ns) })
	} else {
		err = deleteOn(ctx, c, ns)
	}
	if err != nil {
		return fmt.Errorf("delete redis namespace %s: %w", ns, err)
	}
	return nil
}

func deleteOn(ctx context.Context, c goredis.UniversalClient, ns string) error {
	iter := c.Scan(ctx, 0, Prefix(ns)+"*", 1000).Iterator()
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
